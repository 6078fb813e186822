// The runtime's lower half: it plays dxgkrnl and our KMD for the UMD (the device
// callbacks: allocations, locks, submissions through the KMD's portable staging and ring
// code) and forwards guest RAM and BAR0 to the Rust device model (aero-d3d9-host) over a
// loopback socket, live: readbacks come from the device synchronously.
#pragma once

#include <windows.h>

#include <cstdint>

#include "d3dumddi.h"

namespace rt {

// Logs to stderr with a "d3d9(aero): " prefix.
void log(const char *fmt, ...);

// Connects to the host (AERO_D3D9_HOST = port on 127.0.0.1) and brings the device up as
// the KMD's StartDevice does. False (logged) when the host is unreachable.
bool kmd_start();

// The device callbacks handed to the UMD's pfnCreateDevice.
D3DDDI_DEVICECALLBACKS kmd_device_callbacks();

// Waits until the device completed every submission made so far.
void kmd_wait_idle();

// The guest RAM bytes of the allocation the last pfnPresentCb showed (what the device
// wrote back at PRESENT), fetched from the device; nullptr when nothing was presented.
const uint8_t *kmd_presented(uint64_t *size);

// Ends the session with the host.
void kmd_stop();

} // namespace rt
