@echo off
rem Removes the AeroGPU driver package(s) and the Aero test certificate.
setlocal
net session >nul 2>&1
if errorlevel 1 (
    echo Please run uninstall.cmd as Administrator.
    exit /b 1
)
for %%F in ("%WINDIR%\inf\oem*.inf") do (
    findstr /m /i /c:"PCI\VEN_A3A0&DEV_0001" "%%F" >nul && (
        echo Removing %%~nxF
        pnputil -f -d %%~nxF
    )
)
certutil -delstore TrustedPublisher "Aero Test Signing" >nul 2>&1
certutil -delstore Root "Aero Test Signing" >nul 2>&1
echo Done. Test signing mode (x64) was left as it is: "bcdedit /set testsigning off" turns it off.
exit /b 0
