/* Display miniport <-> dxgkrnl port interface (subset, Windows 7 / WDDM 1.1):
 * DRIVER_INITIALIZATION_DATA, DXGKRNL_INTERFACE, child devices, DxgkInitialize. */
#ifndef AEROGPU_DISPMPRT_H
#define AEROGPU_DISPMPRT_H

#include "d3dkmddi.h"

#define DXGKDDI_INTERFACE_VERSION_VISTA 0x1052
#define DXGKDDI_INTERFACE_VERSION_VISTA_SP1 0x1053
#define DXGKDDI_INTERFACE_VERSION_WIN7 0x2005
#define DXGKDDI_INTERFACE_VERSION DXGKDDI_INTERFACE_VERSION_WIN7

/* ---- Device information (DxgkCbGetDeviceInformation), Windows 7 prefix ------------ */
typedef struct _DXGK_DEVICE_INFO {
    PVOID MiniportDeviceContext;
    PDEVICE_OBJECT PhysicalDeviceObject;
    UNICODE_STRING DeviceRegistryPath;
    PCM_RESOURCE_LIST TranslatedResourceList;
    LARGE_INTEGER SystemMemorySize;
    PHYSICAL_ADDRESS HighestPhysicalAddress;
    PHYSICAL_ADDRESS AgpApertureBase;
    SIZE_T AgpApertureSize;
    UINT DockingState; /* DOCKING_STATE */
} DXGK_DEVICE_INFO;
AEROGPU_DDI_ASSERT_OFFSET(DXGK_DEVICE_INFO, TranslatedResourceList, 16, 32);

typedef struct _DXGK_START_INFO {
    ULONG RequiredDxgkInterface;
    GUID AdapterGuid;
    LUID AdapterLuid;
} DXGK_START_INFO;

/* ---- Children (one monitor output) --------------------------------------------------- */
typedef enum _DXGK_CHILD_DEVICE_TYPE {
    TypeUninitialized = 0,
    TypeVideoOutput = 1,
    TypeOther = 2
} DXGK_CHILD_DEVICE_TYPE;

typedef enum _DXGK_CHILD_DEVICE_HPD_AWARENESS {
    HpdAwarenessUninitialized = 0,
    HpdAwarenessAlwaysConnected = 1,
    HpdAwarenessNone = 2,
    HpdAwarenessPolled = 3,
    HpdAwarenessInterruptible = 4
} DXGK_CHILD_DEVICE_HPD_AWARENESS;

#define D3DKMDT_VOT_HD15 0
#define D3DKMDT_MOA_NONE 1

typedef struct _DXGK_CHILD_CAPABILITIES {
    union {
        struct {
            INT InterfaceTechnology;         /* D3DKMDT_VIDEO_OUTPUT_TECHNOLOGY */
            INT MonitorOrientationAwareness; /* D3DKMDT_MONITOR_ORIENTATION_AWARENESS */
            BOOLEAN SupportsSdtvModes;
        } VideoOutput;
        struct {
            UINT MustBeZero;
        } Other;
    } Type;
    DXGK_CHILD_DEVICE_HPD_AWARENESS HpdAwareness;
} DXGK_CHILD_CAPABILITIES;
AEROGPU_DDI_ASSERT_SIZE(DXGK_CHILD_CAPABILITIES, 16, 16);

typedef struct _DXGK_CHILD_DESCRIPTOR {
    DXGK_CHILD_DEVICE_TYPE ChildDeviceType;
    DXGK_CHILD_CAPABILITIES ChildCapabilities;
    ULONG AcpiUid;
    ULONG ChildUid;
} DXGK_CHILD_DESCRIPTOR;
AEROGPU_DDI_ASSERT_SIZE(DXGK_CHILD_DESCRIPTOR, 28, 28);

typedef enum _DXGK_CHILD_STATUS_TYPE {
    StatusUninitialized = 0,
    StatusConnection = 1,
    StatusRotation = 2
} DXGK_CHILD_STATUS_TYPE;

typedef struct _DXGK_CHILD_STATUS {
    DXGK_CHILD_STATUS_TYPE Type;
    ULONG ChildUid;
    union {
        struct {
            BOOLEAN Connected;
        } HotPlug;
        struct {
            UCHAR Angle;
        } Rotation;
    };
} DXGK_CHILD_STATUS;

typedef struct _DXGK_DEVICE_DESCRIPTOR {
    ULONG DescriptorOffset;
    ULONG DescriptorLength;
    PVOID DescriptorBuffer;
} DXGK_DEVICE_DESCRIPTOR;

typedef enum _DXGK_EVENT_TYPE {
    DxgkUndefinedEvent = 0,
    DxgkAcpiEvent = 1,
    DxgkPowerStateEvent = 2,
    DxgkDockingEvent = 3
} DXGK_EVENT_TYPE;

/* ---- dxgkrnl callbacks ------------------------------------------------------------ */
typedef BOOLEAN (AEROGPU_DDI *PKSYNCHRONIZE_ROUTINE_DDI)(PVOID);

typedef struct _DXGKRNL_INTERFACE {
    ULONG Size;
    ULONG Version;
    HANDLE DeviceHandle;
    PVOID DxgkCbEvalAcpiMethod;
    NTSTATUS (AEROGPU_DDI *DxgkCbGetDeviceInformation)(HANDLE, DXGK_DEVICE_INFO *);
    NTSTATUS (AEROGPU_DDI *DxgkCbIndicateChildStatus)(HANDLE, DXGK_CHILD_STATUS *);
    PVOID DxgkCbMapMemory;
    BOOLEAN (AEROGPU_DDI *DxgkCbQueueDpc)(HANDLE);
    PVOID DxgkCbQueryServices;
    PVOID DxgkCbReadDeviceSpace;
    NTSTATUS (AEROGPU_DDI *DxgkCbSynchronizeExecution)(HANDLE, PKSYNCHRONIZE_ROUTINE_DDI, PVOID, ULONG, PBOOLEAN);
    PVOID DxgkCbUnmapMemory;
    PVOID DxgkCbWriteDeviceSpace;
    PVOID DxgkCbIsDevicePresent;
    PVOID (AEROGPU_DDI *DxgkCbGetHandleData)(const void *); /* DXGKARGCB_GETHANDLEDATA* */
    PVOID DxgkCbGetHandleParent;
    PVOID DxgkCbEnumHandleChildren;
    VOID (AEROGPU_DDI *DxgkCbNotifyInterrupt)(HANDLE, const DXGKARGCB_NOTIFY_INTERRUPT_DATA *);
    VOID (AEROGPU_DDI *DxgkCbNotifyDpc)(HANDLE);
    NTSTATUS (AEROGPU_DDI *DxgkCbQueryVidPnInterface)(D3DKMDT_HVIDPN, DXGK_VIDPN_INTERFACE_VERSION, const DXGK_VIDPN_INTERFACE **);
    PVOID DxgkCbQueryMonitorInterface;
    PVOID DxgkCbGetCaptureAddress;
    PVOID DxgkCbLogEtwEvent;
    PVOID DxgkCbExcludeAdapterAccess;
} DXGKRNL_INTERFACE;
AEROGPU_DDI_ASSERT_SIZE(DXGKRNL_INTERFACE, 96, 184);
AEROGPU_DDI_ASSERT_OFFSET(DXGKRNL_INTERFACE, DxgkCbNotifyInterrupt, 68, 128);

/* ---- Miniport entry points --------------------------------------------------------------
 * One typedef per table slot so every stub has the exact parameter count (stdcall on
 * x86 pops the arguments in the callee: a wrong count corrupts the stack). */
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_ADD_DEVICE)(PDEVICE_OBJECT, PVOID *);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_START_DEVICE)(PVOID, DXGK_START_INFO *, DXGKRNL_INTERFACE *, PULONG, PULONG);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_CTX)(PVOID); /* StopDevice, RemoveDevice */
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_DISPATCH_IO_REQUEST)(PVOID, ULONG, PVOID);
typedef BOOLEAN (AEROGPU_DDI *PDXGKDDI_INTERRUPT_ROUTINE)(PVOID, ULONG);
typedef VOID (AEROGPU_DDI *PDXGKDDI_DPC_ROUTINE)(PVOID);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_QUERY_CHILD_RELATIONS)(PVOID, DXGK_CHILD_DESCRIPTOR *, ULONG);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_QUERY_CHILD_STATUS)(PVOID, DXGK_CHILD_STATUS *, BOOLEAN);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_QUERY_DEVICE_DESCRIPTOR)(PVOID, ULONG, DXGK_DEVICE_DESCRIPTOR *);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_SET_POWER_STATE)(PVOID, ULONG, DEVICE_POWER_STATE, POWER_ACTION);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_NOTIFY_ACPI_EVENT)(PVOID, DXGK_EVENT_TYPE, ULONG, PVOID, PULONG);
typedef VOID (AEROGPU_DDI *PDXGKDDI_RESET_DEVICE)(PVOID);
typedef VOID (AEROGPU_DDI *PDXGKDDI_UNLOAD)(VOID);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_QUERY_INTERFACE)(PVOID, PVOID);
typedef VOID (AEROGPU_DDI *PDXGKDDI_CONTROL_ETW_LOGGING)(BOOLEAN, ULONG, UCHAR);
/* (handle, args) DDIs: QueryAdapterInfo, CreateDevice, CreateAllocation, ... */
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_HANDLE_ARGS)(HANDLE, void *);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_HANDLE_CONST_ARGS)(HANDLE, const void *);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_HANDLE)(HANDLE);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_CONTROLINTERRUPT)(HANDLE, DXGK_INTERRUPT_TYPE, BOOLEAN);
typedef NTSTATUS (AEROGPU_DDI *PDXGKDDI_LINK_DEVICE)(PDEVICE_OBJECT, PVOID, PVOID);

typedef struct _DRIVER_INITIALIZATION_DATA {
    ULONG Version;
    PDXGKDDI_ADD_DEVICE DxgkDdiAddDevice;
    PDXGKDDI_START_DEVICE DxgkDdiStartDevice;
    PDXGKDDI_CTX DxgkDdiStopDevice;
    PDXGKDDI_CTX DxgkDdiRemoveDevice;
    PDXGKDDI_DISPATCH_IO_REQUEST DxgkDdiDispatchIoRequest;
    PDXGKDDI_INTERRUPT_ROUTINE DxgkDdiInterruptRoutine;
    PDXGKDDI_DPC_ROUTINE DxgkDdiDpcRoutine;
    PDXGKDDI_QUERY_CHILD_RELATIONS DxgkDdiQueryChildRelations;
    PDXGKDDI_QUERY_CHILD_STATUS DxgkDdiQueryChildStatus;
    PDXGKDDI_QUERY_DEVICE_DESCRIPTOR DxgkDdiQueryDeviceDescriptor;
    PDXGKDDI_SET_POWER_STATE DxgkDdiSetPowerState;
    PDXGKDDI_NOTIFY_ACPI_EVENT DxgkDdiNotifyAcpiEvent;
    PDXGKDDI_RESET_DEVICE DxgkDdiResetDevice;
    PDXGKDDI_UNLOAD DxgkDdiUnload;
    PDXGKDDI_QUERY_INTERFACE DxgkDdiQueryInterface;
    PDXGKDDI_CONTROL_ETW_LOGGING DxgkDdiControlEtwLogging;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiQueryAdapterInfo;
    PDXGKDDI_HANDLE_ARGS DxgkDdiCreateDevice;
    PDXGKDDI_HANDLE_ARGS DxgkDdiCreateAllocation;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiDestroyAllocation;
    PDXGKDDI_HANDLE_ARGS DxgkDdiDescribeAllocation;
    PDXGKDDI_HANDLE_ARGS DxgkDdiGetStandardAllocationDriverData;
    PDXGKDDI_HANDLE_ARGS DxgkDdiAcquireSwizzlingRange;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiReleaseSwizzlingRange;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiPatch;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiSubmitCommand;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiPreemptCommand;
    PDXGKDDI_HANDLE_ARGS DxgkDdiBuildPagingBuffer;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiSetPalette;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiSetPointerPosition;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiSetPointerShape;
    PDXGKDDI_HANDLE DxgkDdiResetFromTimeout;
    PDXGKDDI_HANDLE DxgkDdiRestartFromTimeout;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiEscape;
    PDXGKDDI_HANDLE_ARGS DxgkDdiCollectDbgInfo;
    PDXGKDDI_HANDLE_ARGS DxgkDdiQueryCurrentFence;
    PDXGKDDI_HANDLE_ARGS DxgkDdiIsSupportedVidPn;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiRecommendFunctionalVidPn;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiEnumVidPnCofuncModality;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiSetVidPnSourceAddress;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiSetVidPnSourceVisibility;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiCommitVidPn;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiUpdateActiveVidPnPresentPath;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiRecommendMonitorModes;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiRecommendVidPnTopology;
    PDXGKDDI_HANDLE_ARGS DxgkDdiGetScanLine;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiStopCapture;
    PDXGKDDI_CONTROLINTERRUPT DxgkDdiControlInterrupt;
    PDXGKDDI_HANDLE_ARGS DxgkDdiCreateOverlay;
    PDXGKDDI_HANDLE DxgkDdiDestroyDevice;
    PDXGKDDI_HANDLE_ARGS DxgkDdiOpenAllocation;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiCloseAllocation;
    PDXGKDDI_HANDLE_ARGS DxgkDdiRender;
    PDXGKDDI_HANDLE_ARGS DxgkDdiPresent;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiUpdateOverlay;
    PDXGKDDI_HANDLE_CONST_ARGS DxgkDdiFlipOverlay;
    PDXGKDDI_HANDLE DxgkDdiDestroyOverlay;
    PDXGKDDI_HANDLE_ARGS DxgkDdiCreateContext;
    PDXGKDDI_HANDLE DxgkDdiDestroyContext;
    PDXGKDDI_LINK_DEVICE DxgkDdiLinkDevice;
    PDXGKDDI_HANDLE_ARGS DxgkDdiSetDisplayPrivateDriverFormat;
    /* Windows 7 (DXGKDDI_INTERFACE_VERSION_WIN7): six reserved slots, RenderKm, one
     * reserved slot, QueryVidPnHWCapability. Nothing after this on Windows 7. */
    PVOID DxgkDdiDescribePageTable;
    PVOID DxgkDdiUpdatePageTable;
    PVOID DxgkDdiUpdatePageDirectory;
    PVOID DxgkDdiMovePageDirectory;
    PVOID DxgkDdiSubmitRender;
    PVOID DxgkDdiCreateAllocation2;
    PDXGKDDI_HANDLE_ARGS DxgkDdiRenderKm;
    PVOID Reserved;
    PDXGKDDI_HANDLE_ARGS DxgkDdiQueryVidPnHWCapability;
} DRIVER_INITIALIZATION_DATA;
AEROGPU_DDI_ASSERT_SIZE(DRIVER_INITIALIZATION_DATA, 284, 568);
AEROGPU_DDI_ASSERT_OFFSET(DRIVER_INITIALIZATION_DATA, DxgkDdiQueryAdapterInfo, 68, 136);
AEROGPU_DDI_ASSERT_OFFSET(DRIVER_INITIALIZATION_DATA, DxgkDdiRender, 212, 424);
AEROGPU_DDI_ASSERT_OFFSET(DRIVER_INITIALIZATION_DATA, DxgkDdiQueryVidPnHWCapability, 280, 560);

/* Exported by dxgkrnl.sys (import library generated from dxgkrnl.def). */
NTSTATUS AEROGPU_DDI DxgkInitialize(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath,
                                    DRIVER_INITIALIZATION_DATA *DriverInitializationData);

#endif /* AEROGPU_DISPMPRT_H */
