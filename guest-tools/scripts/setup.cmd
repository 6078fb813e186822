@echo off
rem Aero guest tools setup for Windows 7 SP1 (run as Administrator from the CD root).
setlocal
set ROOT=%~dp0
set ARCH=x86
if /i "%PROCESSOR_ARCHITECTURE%"=="AMD64" set ARCH=amd64
if /i "%PROCESSOR_ARCHITEW6432%"=="AMD64" set ARCH=amd64

net session >nul 2>&1
if errorlevel 1 (
    echo Please run setup.cmd as Administrator.
    exit /b 1
)

echo Trusting the Aero test-signing certificate...
certutil -f -addstore Root "%ROOT%certs\aero-test.cer" >nul || goto :fail
certutil -f -addstore TrustedPublisher "%ROOT%certs\aero-test.cer" >nul || goto :fail

if /i "%ARCH%"=="amd64" (
    bcdedit /enum {current} | findstr /i /c:"testsigning" | findstr /i "Yes" >nul
    if errorlevel 1 (
        echo.
        echo 64-bit Windows loads test-signed drivers only in test-signing mode.
        choice /c YN /m "Enable test signing now (a reboot is needed afterwards)"
        if errorlevel 2 goto :install
        bcdedit /set testsigning on || goto :fail
        echo Test signing enabled. Reboot, then run setup.cmd again.
        exit /b 0
    )
)

:install
echo Installing the AeroGPU display driver (%ARCH%)...
pnputil -i -a "%ROOT%drivers\%ARCH%\aerogpu\aerogpu.inf" || goto :fail
echo Done. Reboot to start using AeroGPU.
exit /b 0

:fail
echo Setup failed (error %errorlevel%).
exit /b 1
