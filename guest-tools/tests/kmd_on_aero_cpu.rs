//! The shipped `aerogpu.sys` (x86 and x64), exactly as `build.sh` makes it, runs on Aero's own
//! CPU against Aero's own AeroGPU device model. The test plays Windows: it loads the
//! image, answers the driver's ntoskrnl/HAL/dxgkrnl imports (pool, contiguous memory,
//! MmMapIoSpace, registry, spin locks, DxgkInitialize) and the dxgkrnl callbacks, and
//! calls the DDIs in the order dxgkrnl does: DriverEntry, AddDevice, StartDevice, adapter
//! queries, devices, contexts, allocations, paging, Render, Present, SubmitCommand, the
//! ISR and DPC, display and power. The driver's MMIO goes to the device model, which
//! reads the ring, allocation tables and command streams the driver wrote into RAM and
//! executes them with its CPU executor, so runtime presents are checked by the pixels
//! the scanout shows.
//!
//! This checks what the host-compiled unit tests cannot: the real binary's DDI table,
//! stdcall argument counts (ESP is checked after every call), structure layouts as the
//! driver reads them, its BAR0 and ring programming, and pool/contiguous-memory balance.
//! Not covered: anything about real Windows beyond the documented DDI contracts.

mod common;
#[path = "common/x86_host.rs"]
mod x86_host;

use std::collections::{BTreeMap, HashMap};

use aero_protocol::cmd::{self, Opcode};
use aero_protocol::escape::{self, EscapeHeader, QueryDeviceV2Out, QueryFenceOut};
use aero_protocol::pci::reg;
use aero_protocol::ring::{AllocEntry, AllocTableHeader, RingHeader, SubmitDesc};
use aero_protocol::wddm_alloc::{self, WddmAllocPriv};
use aero_protocol::writer::CmdStreamWriter;
use x86_host::{BAR0, BAR0_SIZE, Conv, Emu, Layout, Return, Services};

const STATUS_SUCCESS: u32 = 0;
const STATUS_OBJECT_NAME_NOT_FOUND: u32 = 0xC000_0034;
const STATUS_BUFFER_TOO_SMALL: u32 = 0xC000_0023;
const STATUS_ACCESS_DENIED: u32 = 0xC000_0022;
const STATUS_NOT_SUPPORTED: u32 = 0xC000_00BB;
const STATUS_INVALID_PARAMETER: u32 = 0xC000_000D;
const STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER: u32 = 0xC01E_0001;
/// DXGK_PRESENTFLAGS
const PRESENT_BLT: u32 = 0x1;
const PRESENT_COLORFILL: u32 = 0x2;
const PRESENT_FLIP: u32 = 0x4;
const PRESENT_SRCCOLORKEY: u32 = 0x10;
/// DXGK_QUERYADAPTERINFOTYPE
const QAI_UMDRIVERPRIVATE: u32 = 0;
const QAI_DRIVERCAPS: u32 = 1;
const QAI_QUERYSEGMENT: u32 = 2;
const DEVICE_HANDLE: u32 = 0xD6C0_0001;
const PDO: u32 = 0x0000_F000; // an address the driver only passes back to us
const SERVICE_KEY: &str = r"\Registry\Machine\System\CurrentControlSet\Services\aerogpu";
const HKR: &str = r"<device driver key>";
/// KeQuerySystemTime (100 ns since 1601): a fixed instant, for determinism.
const SYSTEM_TIME: u64 = 132_000_000_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arch {
    X86,
    X64,
}

impl Arch {
    fn bits(self) -> u32 {
        match self {
            Arch::X86 => 32,
            Arch::X64 => 64,
        }
    }
    /// build.sh's output directory and compiler.
    fn dir(self) -> &'static str {
        match self {
            Arch::X86 => "x86",
            Arch::X64 => "amd64",
        }
    }
    fn compiler(self) -> &'static str {
        match self {
            Arch::X86 => "i686-w64-mingw32-gcc",
            Arch::X64 => "x86_64-w64-mingw32-gcc",
        }
    }
    /// AGPU_NONLOCAL_MB_MAX_X86 / _X64.
    fn nonlocal_mb_max(self) -> u32 {
        match self {
            Arch::X86 => 1024,
            Arch::X64 => 2048,
        }
    }
}

/// Every structure member the test reads or writes, laid out by mingw-w64 from the
/// driver's own headers.
const LAYOUT: &[&str] = &[
    "UNICODE_STRING",
    "DRIVER_INITIALIZATION_DATA",
    "DRIVER_INITIALIZATION_DATA.Version",
    "DXGKRNL_INTERFACE",
    "DXGK_DEVICE_INFO",
    "DXGK_DEVICE_INFO.MiniportDeviceContext",
    "DXGK_DEVICE_INFO.PhysicalDeviceObject",
    "DXGK_DEVICE_INFO.DeviceRegistryPath",
    "DXGK_DEVICE_INFO.TranslatedResourceList",
    "DXGK_START_INFO",
    "CM_RESOURCE_LIST.Count",
    "CM_RESOURCE_LIST.List[0].PartialResourceList.Count",
    "CM_RESOURCE_LIST.List[0].PartialResourceList.PartialDescriptors",
    "CM_PARTIAL_RESOURCE_DESCRIPTOR",
    "CM_PARTIAL_RESOURCE_DESCRIPTOR.Type",
    "CM_PARTIAL_RESOURCE_DESCRIPTOR.u.Memory.Start",
    "CM_PARTIAL_RESOURCE_DESCRIPTOR.u.Memory.Length",
    "OBJECT_ATTRIBUTES.RootDirectory",
    "OBJECT_ATTRIBUTES.ObjectName",
    "KEY_VALUE_PARTIAL_INFORMATION.Type",
    "KEY_VALUE_PARTIAL_INFORMATION.DataLength",
    "KEY_VALUE_PARTIAL_INFORMATION.Data",
    "DXGKARG_QUERYADAPTERINFO",
    "DXGKARG_QUERYADAPTERINFO.Type",
    "DXGKARG_QUERYADAPTERINFO.pOutputData",
    "DXGKARG_QUERYADAPTERINFO.OutputDataSize",
    "DXGK_DRIVERCAPS",
    "DXGK_DRIVERCAPS.MaxAllocationListSlotId",
    "DXGK_DRIVERCAPS.ApertureSegmentCommitLimit",
    "DXGK_DRIVERCAPS.MaxPointerWidth",
    "DXGK_DRIVERCAPS.PointerCaps",
    "DXGK_DRIVERCAPS.GpuEngineTopology",
    "DXGK_QUERYSEGMENTOUT",
    "DXGK_QUERYSEGMENTOUT.NbSegment",
    "DXGK_QUERYSEGMENTOUT.pSegmentDescriptor",
    "DXGK_SEGMENTDESCRIPTOR",
    "DXGK_SEGMENTDESCRIPTOR.Size",
    "DXGK_SEGMENTDESCRIPTOR.Flags",
    "DXGK_CHILD_DESCRIPTOR",
    "DXGK_CHILD_DESCRIPTOR.ChildDeviceType",
    "DXGK_CHILD_DESCRIPTOR.ChildCapabilities.HpdAwareness",
    "DXGK_DEVICE_DESCRIPTOR",
    "DXGK_DEVICE_DESCRIPTOR.DescriptorOffset",
    "DXGK_DEVICE_DESCRIPTOR.DescriptorLength",
    "DXGK_DEVICE_DESCRIPTOR.DescriptorBuffer",
    "DXGKARG_CREATEDEVICE",
    "DXGKARG_CREATEDEVICE.hDevice",
    "DXGKARG_CREATEDEVICE.pInfo",
    "DXGK_DEVICEINFO",
    "DXGK_DEVICEINFO.DmaBufferSize",
    "DXGKARG_CREATECONTEXT",
    "DXGKARG_CREATECONTEXT.hContext",
    "DXGKARG_CREATECONTEXT.ContextInfo",
    "DXGKARG_CREATEALLOCATION",
    "DXGKARG_CREATEALLOCATION.NumAllocations",
    "DXGKARG_CREATEALLOCATION.pAllocationInfo",
    "DXGK_ALLOCATIONINFO",
    "DXGK_ALLOCATIONINFO.pPrivateDriverData",
    "DXGK_ALLOCATIONINFO.PrivateDriverDataSize",
    "DXGK_ALLOCATIONINFO.Size",
    "DXGK_ALLOCATIONINFO.hAllocation",
    "DXGK_ALLOCATIONINFO.Flags",
    "DXGKARG_DESTROYALLOCATION",
    "DXGKARG_DESTROYALLOCATION.NumAllocations",
    "DXGKARG_DESTROYALLOCATION.pAllocationList",
    "DXGKARG_BUILDPAGINGBUFFER",
    "DXGKARG_BUILDPAGINGBUFFER.MapApertureSegment.hAllocation",
    "DXGKARG_BUILDPAGINGBUFFER.MapApertureSegment.NumberOfPages",
    "DXGKARG_BUILDPAGINGBUFFER.MapApertureSegment.pMdl",
    "DXGKARG_BUILDPAGINGBUFFER.MapApertureSegment.MdlOffset",
    "DXGKARG_BUILDPAGINGBUFFER.MapApertureSegment.OffsetInPages",
    "DXGKARG_BUILDPAGINGBUFFER.Operation",
    "MDL",
    "DXGK_ALLOCATIONLIST",
    "DXGK_ALLOCATIONLIST.hDeviceSpecificAllocation",
    "DXGK_ALLOCATIONLIST.Value",
    "DXGKARG_RENDER",
    "DXGKARG_RENDER.pCommand",
    "DXGKARG_RENDER.CommandLength",
    "DXGKARG_RENDER.pDmaBuffer",
    "DXGKARG_RENDER.DmaSize",
    "DXGKARG_RENDER.pAllocationList",
    "DXGKARG_RENDER.AllocationListSize",
    "DXGKARG_SUBMITCOMMAND",
    "DXGKARG_SUBMITCOMMAND.hContext",
    "DXGKARG_SUBMITCOMMAND.SubmissionFenceId",
    "DXGKARG_SUBMITCOMMAND.Flags",
    "DXGKARG_PRESENT",
    "DXGKARG_PRESENT.pDmaBuffer",
    "DXGKARG_PRESENT.DmaSize",
    "DXGKARG_PRESENT.pAllocationList",
    "DXGKARG_PRESENT.MultipassOffset",
    "DXGKARG_PRESENT.Color",
    "DXGKARG_PRESENT.DstRect",
    "DXGKARG_PRESENT.SrcRect",
    "DXGKARG_PRESENT.SubRectCnt",
    "DXGKARG_PRESENT.pDstSubRects",
    "DXGKARG_PRESENT.FlipInterval",
    "DXGKARG_PRESENT.Flags",
    "DXGKARGCB_NOTIFY_INTERRUPT_DATA.InterruptType",
    "DXGKARGCB_NOTIFY_INTERRUPT_DATA.DmaCompleted.SubmissionFenceId",
    "DXGKARGCB_NOTIFY_INTERRUPT_DATA.CrtcVsync.PhysicalAddress",
    "DXGKARG_ESCAPE",
    "DXGKARG_ESCAPE.pPrivateDriverData",
    "DXGKARG_ESCAPE.PrivateDriverDataSize",
    "DXGKARG_QUERYCURRENTFENCE",
    "DXGKARG_QUERYCURRENTFENCE.CurrentFence",
    "DXGKARG_SETVIDPNSOURCEADDRESS",
    "DXGKARG_SETVIDPNSOURCEADDRESS.hAllocation",
    "DXGKARG_SETVIDPNSOURCEVISIBILITY",
    "DXGKARG_SETVIDPNSOURCEVISIBILITY.Visible",
    "DXGKARG_SETPOINTERSHAPE",
    "DXGKARG_SETPOINTERSHAPE.Flags",
    "DXGKARG_SETPOINTERSHAPE.Width",
    "DXGKARG_SETPOINTERSHAPE.Height",
    "DXGKARG_SETPOINTERSHAPE.Pitch",
    "DXGKARG_SETPOINTERSHAPE.pPixels",
    "DXGKARG_SETPOINTERSHAPE.XHot",
    "DXGKARG_SETPOINTERSHAPE.YHot",
    "DXGKARG_SETPOINTERPOSITION",
    "DXGKARG_SETPOINTERPOSITION.X",
    "DXGKARG_SETPOINTERPOSITION.Y",
    "DXGKARG_SETPOINTERPOSITION.Flags",
    "DXGKARG_GETSCANLINE",
    "DXGKARG_GETSCANLINE.InVerticalBlank",
    "DXGKARG_GETSCANLINE.ScanLine",
    "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA",
    "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA.StandardAllocationType",
    "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA.pCreateSharedPrimarySurfaceData",
    "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA.pAllocationPrivateDriverData",
    "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA.AllocationPrivateDriverDataSize",
    "D3DKMDT_SHAREDPRIMARYSURFACEDATA",
    "D3DKMDT_SHAREDPRIMARYSURFACEDATA.Width",
    "D3DKMDT_SHAREDPRIMARYSURFACEDATA.Height",
    "DXGKARG_DESCRIBEALLOCATION",
    "DXGKARG_DESCRIBEALLOCATION.hAllocation",
    "DXGKARG_DESCRIBEALLOCATION.Width",
    "DXGKARG_DESCRIBEALLOCATION.Height",
    "DXGKARG_OPENALLOCATION",
    "DXGKARG_OPENALLOCATION.NumAllocations",
    "DXGKARG_OPENALLOCATION.pOpenAllocation",
    "DXGK_OPENALLOCATIONINFO",
    "DXGK_OPENALLOCATIONINFO.pPrivateDriverData",
    "DXGK_OPENALLOCATIONINFO.PrivateDriverDataSize",
    "DXGK_OPENALLOCATIONINFO.hDeviceSpecificAllocation",
    "DXGKARG_CLOSEALLOCATION",
    "DXGKARG_CLOSEALLOCATION.NumAllocations",
    "DXGKARG_CLOSEALLOCATION.pOpenHandleList",
    "DXGKARG_COMMITVIDPN",
    "DXGKARG_COMMITVIDPN.hFunctionalVidPn",
    "DXGKARG_COMMITVIDPN.AffectedVidPnSourceId",
    "DXGKARG_COMMITVIDPN.hPrimaryAllocation",
    "DXGK_VIDPN_INTERFACE",
    "DXGK_VIDPN_INTERFACE.Version",
    "DXGK_VIDPN_INTERFACE.pfnAcquireSourceModeSet",
    "DXGK_VIDPN_INTERFACE.pfnReleaseSourceModeSet",
    "DXGK_VIDPNSOURCEMODESET_INTERFACE",
    "DXGK_VIDPNSOURCEMODESET_INTERFACE.pfnAcquirePinnedModeInfo",
    "DXGK_VIDPNSOURCEMODESET_INTERFACE.pfnReleaseModeInfo",
    "D3DKMDT_VIDPN_SOURCE_MODE",
    "D3DKMDT_VIDPN_SOURCE_MODE.Format.Graphics.PrimSurfSize.cx",
    "D3DKMDT_VIDPN_SOURCE_MODE.Format.Graphics.PrimSurfSize.cy",
    "D3DKMDT_VIDPN_SOURCE_MODE.Format.Graphics.Stride",
    "D3DKMDT_VIDPN_SOURCE_MODE.Type",
    "D3DKMDT_VIDPN_SOURCE_MODE.Format.Graphics.PixelFormat",
    "D3DKMDT_VIDPN_TARGET_MODE",
    "D3DKMDT_VIDPN_TARGET_MODE.VideoSignalInfo.ActiveSize.cx",
    "D3DKMDT_VIDPN_TARGET_MODE.VideoSignalInfo.ActiveSize.cy",
    "D3DKMDT_VIDPN_TARGET_MODE.VideoSignalInfo.VSyncFreq.Numerator",
    "D3DKMDT_VIDPN_TARGET_MODE.VideoSignalInfo.VSyncFreq.Denominator",
    "D3DKMDT_MONITOR_SOURCE_MODE",
    "D3DKMDT_MONITOR_SOURCE_MODE.VideoSignalInfo.ActiveSize.cx",
    "D3DKMDT_MONITOR_SOURCE_MODE.VideoSignalInfo.ActiveSize.cy",
    "D3DKMDT_MONITOR_SOURCE_MODE.Preference",
    "D3DKMDT_VIDPN_PRESENT_PATH",
    "D3DKMDT_VIDPN_PRESENT_PATH.ImportanceOrdinal",
    "D3DKMDT_VIDPN_PRESENT_PATH.ContentTransformation.Scaling",
    "D3DKMDT_VIDPN_PRESENT_PATH.ContentTransformation.ScalingSupport",
    "D3DKMDT_VIDPN_PRESENT_PATH.ContentTransformation.Rotation",
    "D3DKMDT_VIDPN_PRESENT_PATH.ContentTransformation.RotationSupport",
    "D3DKMDT_VIDPN_PRESENT_PATH.CopyProtection.CopyProtectionSupport",
    "DXGK_VIDPNTOPOLOGY_INTERFACE",
    "DXGK_VIDPNTARGETMODESET_INTERFACE",
    "DXGK_MONITORSOURCEMODESET_INTERFACE",
    "DXGKARG_ISSUPPORTEDVIDPN",
    "DXGKARG_ISSUPPORTEDVIDPN.hDesiredVidPn",
    "DXGKARG_ISSUPPORTEDVIDPN.IsVidPnSupported",
    "DXGKARG_ENUMVIDPNCOFUNCMODALITY",
    "DXGKARG_ENUMVIDPNCOFUNCMODALITY.hConstrainingVidPn",
    "DXGKARG_ENUMVIDPNCOFUNCMODALITY.EnumPivotType",
    "DXGKARG_RECOMMENDMONITORMODES",
    "DXGKARG_RECOMMENDMONITORMODES.hMonitorSourceModeSet",
    "DXGKARG_RECOMMENDMONITORMODES.pMonitorSourceModeSetInterface",
];

/// The DDI table slots, in DRIVER_INITIALIZATION_DATA order after `Version`.
const DDI_SLOTS: &[&str] = &[
    "AddDevice",
    "StartDevice",
    "StopDevice",
    "RemoveDevice",
    "DispatchIoRequest",
    "InterruptRoutine",
    "DpcRoutine",
    "QueryChildRelations",
    "QueryChildStatus",
    "QueryDeviceDescriptor",
    "SetPowerState",
    "NotifyAcpiEvent",
    "ResetDevice",
    "Unload",
    "QueryInterface",
    "ControlEtwLogging",
    "QueryAdapterInfo",
    "CreateDevice",
    "CreateAllocation",
    "DestroyAllocation",
    "DescribeAllocation",
    "GetStandardAllocationDriverData",
    "AcquireSwizzlingRange",
    "ReleaseSwizzlingRange",
    "Patch",
    "SubmitCommand",
    "PreemptCommand",
    "BuildPagingBuffer",
    "SetPalette",
    "SetPointerPosition",
    "SetPointerShape",
    "ResetFromTimeout",
    "RestartFromTimeout",
    "Escape",
    "CollectDbgInfo",
    "QueryCurrentFence",
    "IsSupportedVidPn",
    "RecommendFunctionalVidPn",
    "EnumVidPnCofuncModality",
    "SetVidPnSourceAddress",
    "SetVidPnSourceVisibility",
    "CommitVidPn",
    "UpdateActiveVidPnPresentPath",
    "RecommendMonitorModes",
    "RecommendVidPnTopology",
    "GetScanLine",
    "StopCapture",
    "ControlInterrupt",
    "CreateOverlay",
    "DestroyDevice",
    "OpenAllocation",
    "CloseAllocation",
    "Render",
    "Present",
    "UpdateOverlay",
    "FlipOverlay",
    "DestroyOverlay",
    "CreateContext",
    "DestroyContext",
    "LinkDevice",
    "SetDisplayPrivateDriverFormat",
    // Windows 7 tail: six reserved, RenderKm, one reserved, QueryVidPnHWCapability.
    "-",
    "-",
    "-",
    "-",
    "-",
    "-",
    "RenderKm",
    "-",
    "QueryVidPnHWCapability",
];

/// The VidPN interface tables the test hands out: (type, service prefix, the functions it
/// models; every other slot fails the test).
const VIDPN_INTERFACES: &[(&str, &str, &[&str])] = &[
    (
        "DXGK_VIDPN_INTERFACE",
        "vidpn",
        &[
            "pfnGetTopology",
            "pfnAcquireSourceModeSet",
            "pfnReleaseSourceModeSet",
            "pfnCreateNewSourceModeSet",
            "pfnAssignSourceModeSet",
            "pfnAcquireTargetModeSet",
            "pfnReleaseTargetModeSet",
            "pfnCreateNewTargetModeSet",
            "pfnAssignTargetModeSet",
        ],
    ),
    (
        "DXGK_VIDPNTOPOLOGY_INTERFACE",
        "topology",
        &[
            "pfnGetNumPaths",
            "pfnAcquirePathInfo",
            "pfnUpdatePathSupportInfo",
            "pfnReleasePathInfo",
        ],
    ),
    (
        "DXGK_VIDPNSOURCEMODESET_INTERFACE",
        "source",
        &[
            "pfnAcquirePinnedModeInfo",
            "pfnReleaseModeInfo",
            "pfnCreateNewModeInfo",
            "pfnAddMode",
        ],
    ),
    (
        "DXGK_VIDPNTARGETMODESET_INTERFACE",
        "target",
        &[
            "pfnAcquirePinnedModeInfo",
            "pfnReleaseModeInfo",
            "pfnCreateNewModeInfo",
            "pfnAddMode",
        ],
    ),
    (
        "DXGK_MONITORSOURCEMODESET_INTERFACE",
        "monitor",
        &["pfnCreateNewModeInfo", "pfnAddMode", "pfnReleaseModeInfo"],
    ),
];

/// The dxgkrnl callbacks, in DXGKRNL_INTERFACE order after Size, Version, DeviceHandle.
const CALLBACKS: &[&str] = &[
    "DxgkCbEvalAcpiMethod",
    "DxgkCbGetDeviceInformation",
    "DxgkCbIndicateChildStatus",
    "DxgkCbMapMemory",
    "DxgkCbQueueDpc",
    "DxgkCbQueryServices",
    "DxgkCbReadDeviceSpace",
    "DxgkCbSynchronizeExecution",
    "DxgkCbUnmapMemory",
    "DxgkCbWriteDeviceSpace",
    "DxgkCbIsDevicePresent",
    "DxgkCbGetHandleData",
    "DxgkCbGetHandleParent",
    "DxgkCbEnumHandleChildren",
    "DxgkCbNotifyInterrupt",
    "DxgkCbNotifyDpc",
    "DxgkCbQueryVidPnInterface",
    "DxgkCbQueryMonitorInterface",
    "DxgkCbGetCaptureAddress",
    "DxgkCbLogEtwEvent",
    "DxgkCbExcludeAdapterAccess",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notify {
    DmaCompleted(u32),
    Vsync(u64),
}

/// dxgkrnl's VidPN objects as the driver sees them: one VidPN whose topology has at most
/// one path (source 0 -> target 0), its source and target mode sets (each may have a
/// pinned mode), the mode sets the driver creates and assigns, and a monitor source mode
/// set. Every acquisition must be released.
#[derive(Default)]
struct Vidpn {
    interface: u32,
    topology_interface: u32,
    source_interface: u32,
    target_interface: u32,
    paths: u32,
    path: u32,
    pinned_source: Option<u32>,
    pinned_target: Option<u32>,
    /// Modes the driver created and has neither added nor released.
    loose_modes: Vec<u32>,
    new_source_modes: Vec<u32>,
    new_target_modes: Vec<u32>,
    monitor_modes: Vec<u32>,
    source_assigned: bool,
    target_assigned: bool,
    /// The paths the driver passed to pfnUpdatePathSupportInfo.
    path_updates: Vec<Vec<u8>>,
    acquired: i32,
}

const VIDPN: u32 = 0x71D0_0001;
const TOPOLOGY: u32 = 0x7090_0001;
const SOURCE_SET: u32 = 0x5E70_0001;
const NEW_SOURCE_SET: u32 = 0x5E70_0002;
const TARGET_SET: u32 = 0x7A70_0001;
const NEW_TARGET_SET: u32 = 0x7A70_0002;
const MONITOR_SET: u32 = 0x30A0_0001;
const D3DDDIFMT_X8R8G8B8: u32 = 22;
const STATUS_GRAPHICS_MODE_NOT_PINNED: u32 = 0x401E_0307;
const STATUS_GRAPHICS_INVALID_VIDPN_PRESENT_PATH: u32 = 0xC01E_0319;

/// Windows, as far as aerogpu.sys can see it.
struct Nt {
    layout: Layout,
    /// Live pool blocks: address -> (size, tag).
    pool: BTreeMap<u32, (u32, u32)>,
    /// Live MmAllocateContiguousMemory blocks: address -> size.
    contiguous: BTreeMap<u32, u32>,
    /// Live MmMapIoSpace views: address -> size.
    io_views: BTreeMap<u32, u32>,
    registry: HashMap<String, HashMap<String, u32>>,
    open_keys: HashMap<u32, String>,
    next_key: u32,
    /// The DDI table DxgkInitialize received.
    ddi: HashMap<&'static str, u32>,
    ddi_version: u32,
    /// Filled in once AddDevice returned.
    device_info: Option<u32>,
    resource_list: u32,
    notifications: Vec<Notify>,
    dpcs_queued: u32,
    dpcs_notified: u32,
    /// 100 ns units, as KeQueryInterruptTime reports.
    interrupt_time: u64,
    privileged: bool,
    /// The calling process's handle table (handle -> object) and references taken.
    handles: HashMap<u32, u32>,
    object_refs: i32,
    /// The VidPN dxgkrnl hands out to the VidPN DDIs.
    vidpn: Option<Vidpn>,
    /// The driver's own uses of services that Windows would reject or bugcheck on.
    misuse: Vec<String>,
}

impl Nt {
    fn new(layout: Layout) -> Nt {
        Nt {
            layout,
            pool: BTreeMap::new(),
            contiguous: BTreeMap::new(),
            io_views: BTreeMap::new(),
            registry: HashMap::new(),
            open_keys: HashMap::new(),
            next_key: 0x100,
            ddi: HashMap::new(),
            ddi_version: 0,
            device_info: None,
            resource_list: 0,
            notifications: Vec::new(),
            dpcs_queued: 0,
            dpcs_notified: 0,
            interrupt_time: 1_000_000,
            privileged: false,
            handles: HashMap::new(),
            object_refs: 0,
            vidpn: None,
            misuse: Vec::new(),
        }
    }

    fn l(&self, key: &str) -> u32 {
        self.layout.get(key)
    }

    fn set_registry(&mut self, key: &str, value: &str, v: u32) {
        self.registry
            .entry(key.to_ascii_lowercase())
            .or_default()
            .insert(value.to_ascii_lowercase(), v);
    }

    fn read_unicode(&self, emu: &Emu, us: u32) -> Result<String, String> {
        let len = emu.r16(us)?;
        let buf = emu.read_ptr(us + emu.ptr())?;
        let bytes = emu.read(buf, u32::from(len))?;
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        Ok(String::from_utf16_lossy(&units))
    }
}

impl Nt {
    /// The VidPN interfaces (`vidpn.`, `topology.`, `source.`, `target.`, `monitor.`).
    fn vidpn_service(&mut self, emu: &mut Emu, func: &str) -> Result<Return, String> {
        // Every VidPN function takes at most four arguments.
        let args = [emu.arg(0)?, emu.arg(1)?, emu.arg(2)?, emu.arg(3)?];
        let a = |k: u32| -> Result<u32, String> { Ok(args[k as usize]) };
        let (kind, f) = func.split_once('.').unwrap_or(("", func));
        let mode_size = match kind {
            "source" => self.l("D3DKMDT_VIDPN_SOURCE_MODE"),
            "target" => self.l("D3DKMDT_VIDPN_TARGET_MODE"),
            _ => self.l("D3DKMDT_MONITOR_SOURCE_MODE"),
        };
        let path_size = self.l("D3DKMDT_VIDPN_PRESENT_PATH");
        let v = self.vidpn.as_mut().ok_or("no VidPN")?;
        let ok = |args| Return::stdcall(STATUS_SUCCESS, args);
        Ok(match (kind, f) {
            ("vidpn", "pfnGetTopology") => {
                emu.write_ptr(a(1)?, TOPOLOGY)?;
                emu.write_ptr(a(2)?, v.topology_interface)?;
                ok(3)
            }
            ("topology", "pfnGetNumPaths") => {
                emu.write_ptr(a(1)?, v.paths)?;
                ok(2)
            }
            ("topology", "pfnAcquirePathInfo") => {
                if v.paths == 0 || a(1)? != 0 || a(2)? != 0 {
                    return Ok(Return::stdcall(
                        STATUS_GRAPHICS_INVALID_VIDPN_PRESENT_PATH,
                        4,
                    ));
                }
                emu.write_ptr(a(3)?, v.path)?;
                v.acquired += 1;
                ok(4)
            }
            ("topology", "pfnUpdatePathSupportInfo") => {
                v.path_updates.push(emu.read(a(1)?, path_size)?);
                ok(2)
            }
            ("topology", "pfnReleasePathInfo") => {
                if a(1)? != v.path {
                    self.misuse
                        .push("pfnReleasePathInfo of a path not handed out".into());
                }
                v.acquired -= 1;
                ok(2)
            }
            ("vidpn", "pfnAcquireSourceModeSet" | "pfnAcquireTargetModeSet") => {
                let source = f.contains("Source");
                let (set, interface) = if source {
                    (SOURCE_SET, v.source_interface)
                } else {
                    (TARGET_SET, v.target_interface)
                };
                emu.write_ptr(a(2)?, set)?;
                emu.write_ptr(a(3)?, interface)?;
                v.acquired += 1;
                ok(4)
            }
            ("vidpn", "pfnReleaseSourceModeSet" | "pfnReleaseTargetModeSet") => {
                let want = if f.contains("Source") {
                    SOURCE_SET
                } else {
                    TARGET_SET
                };
                if a(1)? != want {
                    self.misuse.push(format!("{f} of set {:#x}", a(1)?));
                }
                v.acquired -= 1;
                ok(2)
            }
            ("vidpn", "pfnCreateNewSourceModeSet" | "pfnCreateNewTargetModeSet") => {
                let (set, interface) = if f.contains("Source") {
                    (NEW_SOURCE_SET, v.source_interface)
                } else {
                    (NEW_TARGET_SET, v.target_interface)
                };
                emu.write_ptr(a(2)?, set)?;
                emu.write_ptr(a(3)?, interface)?;
                ok(4)
            }
            ("vidpn", "pfnAssignSourceModeSet" | "pfnAssignTargetModeSet") => {
                let source = f.contains("Source");
                if a(2)?
                    != if source {
                        NEW_SOURCE_SET
                    } else {
                        NEW_TARGET_SET
                    }
                {
                    return Err(format!("{f} of a set the driver did not create"));
                }
                if source {
                    v.source_assigned = true;
                } else {
                    v.target_assigned = true;
                }
                ok(3)
            }
            ("source" | "target", "pfnAcquirePinnedModeInfo") => {
                let pinned = if kind == "source" {
                    v.pinned_source
                } else {
                    v.pinned_target
                };
                emu.write_ptr(a(1)?, pinned.unwrap_or(0))?;
                match pinned {
                    Some(_) => {
                        v.acquired += 1;
                        ok(2)
                    }
                    None => Return::stdcall(STATUS_GRAPHICS_MODE_NOT_PINNED, 2),
                }
            }
            ("source" | "target" | "monitor", "pfnCreateNewModeInfo") => {
                let m = emu.alloc(mode_size, 16)?;
                v.loose_modes.push(m);
                emu.write_ptr(a(1)?, m)?;
                ok(2)
            }
            ("source" | "target" | "monitor", "pfnAddMode") => {
                let m = a(1)?;
                let Some(i) = v.loose_modes.iter().position(|x| *x == m) else {
                    return Err(format!(
                        "{kind}.pfnAddMode of a mode not created by pfnCreateNewModeInfo"
                    ));
                };
                v.loose_modes.swap_remove(i);
                match kind {
                    "source" => v.new_source_modes.push(m),
                    "target" => v.new_target_modes.push(m),
                    _ => v.monitor_modes.push(m),
                }
                ok(2)
            }
            ("source" | "target" | "monitor", "pfnReleaseModeInfo") => {
                let m = a(1)?;
                if Some(m) == v.pinned_source || Some(m) == v.pinned_target {
                    v.acquired -= 1;
                } else if let Some(i) = v.loose_modes.iter().position(|x| *x == m) {
                    v.loose_modes.swap_remove(i);
                } else {
                    self.misuse
                        .push(format!("{kind}.pfnReleaseModeInfo of {m:#x}"));
                }
                ok(2)
            }
            _ => {
                return Err(format!(
                    "the driver called VidPN function {func}, which this test does not model"
                ));
            }
        })
    }
}

impl Services for Nt {
    fn service(&mut self, emu: &mut Emu, name: &str) -> Result<Return, String> {
        let func = name.rsplit('!').next().unwrap_or(name);
        let a = |k: u32| emu.arg(k);
        Ok(match func {
            "ExAllocatePoolWithTag" => {
                let (size, tag) = (a(1)?, a(2)?);
                let p = if size == 0 || size > 16 << 20 {
                    0
                } else {
                    let p = emu.alloc(size, 16)?;
                    // Pool is not zeroed: garbage catches a driver that forgets to clear.
                    emu.write(p, &vec![0xCD; size as usize])?;
                    self.pool.insert(p, (size, tag));
                    p
                };
                Return::stdcall(p, 3)
            }
            "ExFreePoolWithTag" => {
                let (p, tag) = (a(0)?, a(1)?);
                match self.pool.remove(&p) {
                    Some((_, t)) if t == tag => {}
                    Some((_, t)) => self.misuse.push(format!(
                        "pool {p:#x} freed with tag {tag:#x}, allocated with {t:#x}"
                    )),
                    None => self.misuse.push(format!(
                        "ExFreePoolWithTag of {p:#x}, not a live pool block"
                    )),
                }
                Return::stdcall(0, 2)
            }
            "MmAllocateContiguousMemory" => {
                let size = a(0)?;
                let p = if size == 0 || size > 16 << 20 {
                    0
                } else {
                    let p = emu.alloc(size, 4096)?;
                    emu.write(p, &vec![0xCD; size as usize])?;
                    self.contiguous.insert(p, size);
                    p
                };
                Return::stdcall(p, 3) // NumberOfBytes + a 64-bit PHYSICAL_ADDRESS
            }
            "MmFreeContiguousMemory" => {
                let p = a(0)?;
                if self.contiguous.remove(&p).is_none() {
                    self.misuse.push(format!(
                        "MmFreeContiguousMemory of {p:#x}, not a live block"
                    ));
                }
                Return::stdcall(0, 1)
            }
            "MmGetPhysicalAddress" => Return {
                eax: a(0)?, // virtual = physical
                edx: 0,
                pop: 4,
            },
            "MmMapIoSpace" => {
                // PHYSICAL_ADDRESS by value: two stack slots on x86, one register on x64.
                let (pa, size) = if emu.bits == 64 {
                    (emu.arg64(0)?, a(1)?)
                } else {
                    (u64::from(a(0)?) | u64::from(a(1)?) << 32, a(2)?)
                };
                let (lo, hi) = (pa as u32, (pa >> 32) as u32);
                let in_bar = lo >= BAR0
                    && u64::from(lo) + u64::from(size) <= u64::from(BAR0) + u64::from(BAR0_SIZE);
                let in_ram = u64::from(lo) + u64::from(size) <= u64::from(x86_host::RAM_SIZE);
                let va = if hi == 0 && size != 0 && (in_bar || in_ram) {
                    lo
                } else {
                    0
                };
                if va != 0 {
                    if self.io_views.contains_key(&va) {
                        self.misuse
                            .push(format!("MmMapIoSpace of {va:#x} while already mapped"));
                    }
                    self.io_views.insert(va, size);
                }
                Return::stdcall(va, 4)
            }
            "MmUnmapIoSpace" => {
                let (va, size) = (a(0)?, a(1)?);
                match self.io_views.remove(&va) {
                    Some(s) if s == size => {}
                    other => self
                        .misuse
                        .push(format!("MmUnmapIoSpace({va:#x}, {size}) of view {other:?}")),
                }
                Return::stdcall(0, 2)
            }
            "KeQueryInterruptTime" => Return {
                eax: self.interrupt_time as u32,
                edx: (self.interrupt_time >> 32) as u32,
                pop: 0,
            },
            "KeQuerySystemTime" => {
                emu.w64(a(0)?, SYSTEM_TIME)?;
                Return::stdcall(0, 1)
            }
            "RtlInitUnicodeString" => {
                let (dst, src) = (a(0)?, a(1)?);
                let len = if src == 0 {
                    0
                } else {
                    2 * emu.wstr(src)?.encode_utf16().count() as u32
                };
                emu.w16(dst, len as u16)?;
                emu.w16(dst + 2, if src == 0 { 0 } else { len as u16 + 2 })?;
                emu.write_ptr(dst + emu.ptr(), src)?;
                Return::stdcall(0, 2)
            }
            "RtlCopyUnicodeString" => {
                let (dst, src) = (a(0)?, a(1)?);
                let n = if src == 0 {
                    0
                } else {
                    emu.r16(src)?.min(emu.r16(dst + 2)?)
                };
                if n > 0 {
                    let bytes = emu.read(emu.read_ptr(src + emu.ptr())?, u32::from(n))?;
                    emu.write(emu.read_ptr(dst + emu.ptr())?, &bytes)?;
                }
                emu.w16(dst, n)?;
                Return::stdcall(0, 2)
            }
            "SeSinglePrivilegeCheck" => Return::stdcall(u32::from(self.privileged), 3),
            "ObReferenceObjectByHandle" => {
                let (h, mode, out) = (a(0)?, a(3)?, a(4)?);
                if mode != 1 {
                    self.misuse.push(format!(
                        "ObReferenceObjectByHandle in mode {mode} (not UserMode)"
                    ));
                }
                let status = match self.handles.get(&h) {
                    Some(&object) => {
                        emu.write_ptr(out, object)?;
                        self.object_refs += 1;
                        STATUS_SUCCESS
                    }
                    None => 0xC000_0008, // STATUS_INVALID_HANDLE
                };
                Return::stdcall(status, 6)
            }
            // Fastcall on x86 (the object in ECX), the first argument on x64.
            "ObfDereferenceObject" => {
                let object = if emu.bits == 32 { emu.ecx() } else { a(0)? };
                if !self.handles.values().any(|&o| o == object) || self.object_refs == 0 {
                    self.misuse.push(format!(
                        "ObfDereferenceObject({object:#x}) without a reference"
                    ));
                }
                self.object_refs -= 1;
                Return::cdecl(0)
            }
            "IoOpenDeviceRegistryKey" => {
                let (pdo, kind, out) = (a(0)?, a(1)?, a(3)?);
                if pdo != PDO || kind != 2 {
                    self.misuse
                        .push(format!("IoOpenDeviceRegistryKey({pdo:#x}, {kind})"));
                }
                let h = self.next_key;
                self.next_key += 4;
                self.open_keys.insert(h, HKR.to_ascii_lowercase());
                emu.write_ptr(out, h)?;
                Return::stdcall(STATUS_SUCCESS, 4)
            }
            "ZwOpenKey" => {
                let (out, oa) = (a(0)?, a(2)?);
                let root = emu.r32(oa + self.l("OBJECT_ATTRIBUTES.RootDirectory"))?;
                let name =
                    self.read_unicode(emu, emu.r32(oa + self.l("OBJECT_ATTRIBUTES.ObjectName"))?)?;
                let path = if root == 0 {
                    name.to_ascii_lowercase()
                } else {
                    match self.open_keys.get(&root) {
                        Some(p) => format!("{p}\\{}", name.to_ascii_lowercase()),
                        None => {
                            self.misuse
                                .push(format!("ZwOpenKey under unknown handle {root:#x}"));
                            return Ok(Return::stdcall(0xC000_0008, 3));
                        }
                    }
                };
                let status = if self.registry.contains_key(&path) {
                    let h = self.next_key;
                    self.next_key += 4;
                    self.open_keys.insert(h, path);
                    emu.write_ptr(out, h)?;
                    STATUS_SUCCESS
                } else {
                    STATUS_OBJECT_NAME_NOT_FOUND
                };
                Return::stdcall(status, 3)
            }
            "ZwQueryValueKey" => {
                let (h, name, class, buf, len, result) = (a(0)?, a(1)?, a(2)?, a(3)?, a(4)?, a(5)?);
                let name = self.read_unicode(emu, name)?.to_ascii_lowercase();
                let Some(key) = self.open_keys.get(&h) else {
                    self.misuse
                        .push(format!("ZwQueryValueKey on unknown handle {h:#x}"));
                    return Ok(Return::stdcall(0xC000_0008, 6));
                };
                if class != 2 {
                    return Err(format!(
                        "ZwQueryValueKey class {class}: only KeyValuePartialInformation is modelled"
                    ));
                }
                let value = self.registry.get(key).and_then(|k| k.get(&name)).copied();
                let status = match value {
                    None => STATUS_OBJECT_NAME_NOT_FOUND,
                    Some(v) => {
                        let data = self.l("KEY_VALUE_PARTIAL_INFORMATION.Data");
                        emu.w32(result, data + 4)?;
                        if len < data + 4 {
                            STATUS_BUFFER_TOO_SMALL
                        } else {
                            emu.w32(buf + self.l("KEY_VALUE_PARTIAL_INFORMATION.Type"), 4)?; // REG_DWORD
                            emu.w32(buf + self.l("KEY_VALUE_PARTIAL_INFORMATION.DataLength"), 4)?;
                            emu.w32(buf + data, v)?;
                            STATUS_SUCCESS
                        }
                    }
                };
                Return::stdcall(status, 6)
            }
            "ZwClose" => {
                let h = a(0)?;
                if self.open_keys.remove(&h).is_none() {
                    self.misuse
                        .push(format!("ZwClose of unknown handle {h:#x}"));
                }
                Return::stdcall(STATUS_SUCCESS, 1)
            }
            "memcpy" | "memmove" => {
                let (d, s, n) = (a(0)?, a(1)?, a(2)?);
                let bytes = emu.read(s, n)?;
                emu.write(d, &bytes)?;
                Return::cdecl(d)
            }
            "memset" => {
                let (d, c, n) = (a(0)?, a(1)?, a(2)?);
                emu.write(d, &vec![c as u8; n as usize])?;
                Return::cdecl(d)
            }
            // x86 HAL spin locks are fastcall (the lock in ECX, the old IRQL back in AL, the
            // new one in DL); x64 ntoskrnl's take ordinary arguments.
            "KfAcquireSpinLock" | "KeAcquireSpinLockRaiseToDpc" => {
                let lock = if func.starts_with("Kf") {
                    emu.ecx()
                } else {
                    a(0)?
                };
                if emu.r32(lock)? != 0 {
                    return Err(format!("spin lock {lock:#x} acquired while held: deadlock"));
                }
                emu.w32(lock, 1)?;
                Return::cdecl(0) // PASSIVE_LEVEL was the old IRQL
            }
            "KfReleaseSpinLock" | "KeReleaseSpinLock" => {
                let (lock, irql) = if func.starts_with("Kf") {
                    (emu.ecx(), emu.edx() as u8)
                } else {
                    (a(0)?, a(1)? as u8)
                };
                if emu.r32(lock)? != 1 {
                    self.misuse
                        .push(format!("spin lock {lock:#x} released while free"));
                }
                if irql != 0 {
                    self.misuse
                        .push(format!("spin lock released to IRQL {irql}"));
                }
                emu.w32(lock, 0)?;
                Return::stdcall(0, if func.starts_with("Kf") { 0 } else { 2 })
            }
            "DxgkInitialize" => {
                let init = a(2)?;
                self.ddi_version = emu.r32(init + self.l("DRIVER_INITIALIZATION_DATA.Version"))?;
                for slot in DDI_SLOTS.iter().filter(|s| **s != "-") {
                    let off = self.l(&format!("DRIVER_INITIALIZATION_DATA.DxgkDdi{slot}"));
                    self.ddi.insert(slot, emu.read_ptr(init + off)?);
                }
                Return::stdcall(STATUS_SUCCESS, 3)
            }
            "DxgkCbGetDeviceInformation" => {
                let (h, out) = (a(0)?, a(1)?);
                if h != DEVICE_HANDLE {
                    self.misuse.push(format!("{func} with handle {h:#x}"));
                }
                let info = self
                    .device_info
                    .ok_or("DxgkCbGetDeviceInformation before AddDevice")?;
                let bytes = emu.read(info, self.l("DXGK_DEVICE_INFO"))?;
                emu.write(out, &bytes)?;
                Return::stdcall(STATUS_SUCCESS, 2)
            }
            "DxgkCbNotifyInterrupt" => {
                let d = a(1)?;
                let kind = emu.r32(d + self.l("DXGKARGCB_NOTIFY_INTERRUPT_DATA.InterruptType"))?;
                self.notifications.push(match kind {
                    1 => Notify::DmaCompleted(emu.r32(
                        d
                            + self.l(
                                "DXGKARGCB_NOTIFY_INTERRUPT_DATA.DmaCompleted.SubmissionFenceId",
                            ),
                    )?),
                    3 => Notify::Vsync(emu.r64(
                        d + self.l("DXGKARGCB_NOTIFY_INTERRUPT_DATA.CrtcVsync.PhysicalAddress"),
                    )?),
                    k => return Err(format!("DxgkCbNotifyInterrupt type {k}")),
                });
                Return::stdcall(0, 2)
            }
            "DxgkCbQueueDpc" => {
                self.dpcs_queued += 1;
                Return::stdcall(1, 1)
            }
            "DxgkCbNotifyDpc" => {
                self.dpcs_notified += 1;
                Return::stdcall(0, 1)
            }
            "DxgkCbQueryVidPnInterface" => {
                let (h, version, out) = (a(0)?, a(1)?, a(2)?);
                let v = self.vidpn.as_ref().ok_or("no VidPN")?;
                if h != VIDPN || version != 1 {
                    return Err(format!("DxgkCbQueryVidPnInterface({h:#x}, {version})"));
                }
                emu.write_ptr(out, v.interface)?;
                Return::stdcall(STATUS_SUCCESS, 3)
            }
            _ if func.contains('.') => return self.vidpn_service(emu, func),
            other => {
                return Err(format!(
                    "the driver called {name} ({other}), which this test does not provide"
                ));
            }
        })
    }
}

/// The driver, loaded and started, with the test's Windows around it.
/// The arguments of one DxgkDdiPresent call (rects are left, top, right, bottom).
#[derive(Clone, Debug)]
struct PresentCall {
    flags: u32,
    src: u32,
    dst: u32,
    src_rect: [i32; 4],
    dst_rect: [i32; 4],
    sub_rects: Vec<[i32; 4]>,
    /// SubRectCnt when it is not sub_rects.len() (hostile counts).
    sub_rect_count: Option<u32>,
    color: u32,
    dma_size: u32,
    multipass_offset: u32,
    /// pAllocationList NULL.
    no_list: bool,
}

impl Default for PresentCall {
    fn default() -> Self {
        PresentCall {
            flags: 0,
            src: 0,
            dst: 0,
            src_rect: [0; 4],
            dst_rect: [0; 4],
            sub_rects: Vec::new(),
            sub_rect_count: None,
            color: 0,
            dma_size: 256 << 10,
            multipass_offset: 0,
            no_list: false,
        }
    }
}

struct Kmd {
    emu: Emu,
    nt: Nt,
    adapter: u32,
    /// Next free page of the aperture segment (the test plays VidMm's allocator).
    aperture_next: u32,
}

impl Kmd {
    fn l(&self, key: &str) -> u32 {
        self.nt.l(key)
    }

    /// Calls DDI `name` (stdcall) and returns its NTSTATUS / result.
    fn ddi(&mut self, name: &str, args: &[u32]) -> u32 {
        let f = *self
            .nt
            .ddi
            .get(name)
            .unwrap_or_else(|| panic!("no DDI {name}"));
        assert_ne!(f, 0, "DDI {name} is NULL");
        let r = self
            .emu
            .call(&mut self.nt, f, args, Conv::Stdcall)
            .unwrap_or_else(|e| panic!("DDI {name}: {e}"));
        r as u32
    }

    fn alloc(&mut self, size: u32) -> u32 {
        self.emu.alloc(size, 16).unwrap()
    }
    fn put(&mut self, base: u32, field: &str, v: u32) {
        let off = self.l(field);
        self.emu.w32(base + off, v).unwrap();
    }
    fn get(&self, base: u32, field: &str) -> u32 {
        self.emu.r32(base + self.l(field)).unwrap()
    }
    fn reg(&self, off: u32) -> u32 {
        self.emu.bus.gpu.read_reg(off)
    }

    /// Loads the driver, runs DriverEntry, AddDevice and StartDevice.
    fn start(arch: Arch, sys: &[u8], layout: Layout, configure: impl FnOnce(&mut Nt)) -> Kmd {
        let mut emu = Emu::new(x86_host::host_gpu(), arch.bits());
        let mut nt = Nt::new(layout);
        nt.set_registry(SERVICE_KEY, "-", 0);
        nt.set_registry(&format!("{SERVICE_KEY}\\Parameters"), "-", 0);
        nt.set_registry(HKR, "-", 0);
        nt.set_registry(&format!("{HKR}\\Parameters"), "-", 0);
        configure(&mut nt);
        emu.set_shared_times(nt.interrupt_time, SYSTEM_TIME)
            .unwrap();
        let (_, entry) = emu.load_pe(sys).expect("load aerogpu.sys");
        let drv = emu.alloc(0x100, 16).unwrap();
        let reg_path = emu.unicode_string(SERVICE_KEY).unwrap();
        let st = emu
            .call(&mut nt, entry, &[drv, reg_path], Conv::Stdcall)
            .expect("DriverEntry") as u32;
        assert_eq!(st, STATUS_SUCCESS, "DriverEntry");
        assert_eq!(nt.ddi_version, 0x2005, "DXGKDDI_INTERFACE_VERSION_WIN7");
        // dxgkrnl calls every slot it knows on Windows 7: none may be NULL.
        for (slot, f) in &nt.ddi {
            assert!(
                *f >= x86_host::IMAGE_MIN && *f < x86_host::IMAGE_MAX,
                "DDI {slot} = {f:#x}"
            );
        }
        let mut k = Kmd {
            emu,
            nt,
            adapter: 0,
            aperture_next: 0,
        };

        let ctx_out = k.alloc(4);
        assert_eq!(k.ddi("AddDevice", &[PDO, ctx_out]), STATUS_SUCCESS);
        k.adapter = k.emu.read_ptr(ctx_out).unwrap();

        // What DxgkCbGetDeviceInformation returns, as Windows lists a VGA-compatible PCI
        // display function: legacy VGA ports and window, the LFB BAR, then BAR0 (the
        // driver must find BAR0 wherever it is).
        let desc = k.l("CM_PARTIAL_RESOURCE_DESCRIPTOR");
        let descs = k.l("CM_RESOURCE_LIST.List[0].PartialResourceList.PartialDescriptors");
        let resources: [(u8, u32, u32); 4] = [
            (1, 0x3C0, 0x20),           // CmResourceTypePort
            (3, 0xA_0000, 0x2_0000),    // CmResourceTypeMemory: legacy VGA window
            (3, 0xE000_0000, 16 << 20), // the LFB BAR
            (3, BAR0, BAR0_SIZE),       // the registers
        ];
        let list = k.alloc(descs + resources.len() as u32 * desc);
        k.put(list, "CM_RESOURCE_LIST.Count", 1);
        k.put(
            list,
            "CM_RESOURCE_LIST.List[0].PartialResourceList.Count",
            resources.len() as u32,
        );
        for (i, (kind, start, len)) in resources.into_iter().enumerate() {
            let d = list + descs + i as u32 * desc;
            k.emu
                .w8(d + k.l("CM_PARTIAL_RESOURCE_DESCRIPTOR.Type"), kind)
                .unwrap();
            k.put(d, "CM_PARTIAL_RESOURCE_DESCRIPTOR.u.Memory.Start", start);
            k.put(d, "CM_PARTIAL_RESOURCE_DESCRIPTOR.u.Memory.Length", len);
        }
        let info = k.alloc(k.l("DXGK_DEVICE_INFO"));
        k.put(info, "DXGK_DEVICE_INFO.MiniportDeviceContext", k.adapter);
        k.put(info, "DXGK_DEVICE_INFO.PhysicalDeviceObject", PDO);
        k.put(info, "DXGK_DEVICE_INFO.TranslatedResourceList", list);
        k.nt.device_info = Some(info);
        k.nt.resource_list = list;

        k.start_device();
        k
    }

    /// DxgkDdiStartDevice with a fresh DXGKRNL_INTERFACE (dxgkrnl also restarts a
    /// stopped adapter this way).
    fn start_device(&mut self) {
        let k = self;
        let dxgk_size = k.l("DXGKRNL_INTERFACE");
        let dxgk = k.alloc(dxgk_size);
        k.emu.w32(dxgk, dxgk_size).unwrap();
        k.put(dxgk, "DXGKRNL_INTERFACE.Version", 0x2005);
        k.put(dxgk, "DXGKRNL_INTERFACE.DeviceHandle", DEVICE_HANDLE);
        for cb in CALLBACKS {
            let t = k.emu.thunk(&format!("dxgkrnl!{cb}"));
            k.put(dxgk, &format!("DXGKRNL_INTERFACE.{cb}"), t);
        }
        let start_info = k.alloc(k.l("DXGK_START_INFO"));
        let counts = k.alloc(8);
        let adapter = k.adapter;
        assert_eq!(
            k.ddi(
                "StartDevice",
                &[adapter, start_info, dxgk, counts, counts + 4]
            ),
            STATUS_SUCCESS,
            "StartDevice"
        );
        assert_eq!(k.emu.r32(counts).unwrap(), 1, "one VidPN source");
        assert_eq!(k.emu.r32(counts + 4).unwrap(), 1, "one child");
    }

    /// Device interrupt line -> the driver's ISR (and DPC when it asked for one), as
    /// dxgkrnl does. Returns whether the ISR claimed the interrupt.
    fn service_interrupt(&mut self) -> bool {
        if !self.emu.bus.gpu.irq_level() {
            return false;
        }
        let queued = self.nt.dpcs_queued;
        let adapter = self.adapter;
        let claimed = self.ddi("InterruptRoutine", &[adapter, 0]) & 0xFF != 0;
        assert!(
            !self.emu.bus.gpu.irq_level(),
            "the ISR acknowledged every pending cause"
        );
        if self.nt.dpcs_queued > queued {
            let notified = self.nt.dpcs_notified;
            let f = self.nt.ddi["DpcRoutine"];
            self.emu
                .call(&mut self.nt, f, &[adapter], Conv::Stdcall)
                .expect("DpcRoutine");
            assert_eq!(
                self.nt.dpcs_notified,
                notified + 1,
                "the DPC calls DxgkCbNotifyDpc"
            );
        }
        claimed
    }

    fn query_adapter_info(&mut self, kind: u32, out_size: u32) -> (u32, u32) {
        let out = self.alloc(out_size);
        let q = self.alloc(self.l("DXGKARG_QUERYADAPTERINFO"));
        self.put(q, "DXGKARG_QUERYADAPTERINFO.Type", kind);
        self.put(q, "DXGKARG_QUERYADAPTERINFO.pOutputData", out);
        self.put(q, "DXGKARG_QUERYADAPTERINFO.OutputDataSize", out_size);
        let adapter = self.adapter;
        (self.ddi("QueryAdapterInfo", &[adapter, q]), out)
    }

    fn escape(&mut self, request: &[u8]) -> (u32, Vec<u8>) {
        let buf = self.emu.alloc_bytes(request).unwrap();
        let e = self.alloc(self.l("DXGKARG_ESCAPE"));
        self.put(e, "DXGKARG_ESCAPE.pPrivateDriverData", buf);
        self.put(
            e,
            "DXGKARG_ESCAPE.PrivateDriverDataSize",
            request.len() as u32,
        );
        let adapter = self.adapter;
        let st = self.ddi("Escape", &[adapter, e]);
        (st, self.emu.read(buf, request.len() as u32).unwrap())
    }

    /// MAP_SHARED_HANDLE of `handle`: (status, debug token).
    fn map_shared_handle(&mut self, handle: u64) -> (u32, u32) {
        let req = escape::MapSharedHandleInout {
            hdr: escape_header(
                escape::OP_MAP_SHARED_HANDLE,
                escape::MapSharedHandleInout::SIZE,
            ),
            shared_handle: handle,
            ..Default::default()
        };
        let (st, out) = self.escape(&req.to_bytes());
        (
            st,
            escape::MapSharedHandleInout::decode(&out)
                .unwrap()
                .debug_token,
        )
    }

    fn query_fence(&mut self) -> QueryFenceOut {
        let req = QueryFenceOut {
            hdr: EscapeHeader {
                version: escape::ESCAPE_VERSION,
                op: escape::OP_QUERY_FENCE,
                size_bytes: QueryFenceOut::SIZE as u32,
                reserved0: 0,
            },
            ..Default::default()
        };
        let (st, out) = self.escape(&req.to_bytes());
        assert_eq!(st, STATUS_SUCCESS, "QUERY_FENCE escape");
        QueryFenceOut::decode(&out).unwrap()
    }

    fn create_device(&mut self) -> u32 {
        let info = self.alloc(self.l("DXGK_DEVICEINFO"));
        let c = self.alloc(self.l("DXGKARG_CREATEDEVICE"));
        self.put(c, "DXGKARG_CREATEDEVICE.hDevice", 0xDE71_CE00);
        self.put(c, "DXGKARG_CREATEDEVICE.pInfo", info);
        let adapter = self.adapter;
        assert_eq!(self.ddi("CreateDevice", &[adapter, c]), STATUS_SUCCESS);
        assert_eq!(self.get(info, "DXGK_DEVICEINFO.DmaBufferSize"), 256 << 10);
        self.get(c, "DXGKARG_CREATEDEVICE.hDevice")
    }

    fn create_context(&mut self, device: u32) -> u32 {
        let c = self.alloc(self.l("DXGKARG_CREATECONTEXT"));
        assert_eq!(self.ddi("CreateContext", &[device, c]), STATUS_SUCCESS);
        let dma = self
            .emu
            .r32(c + self.l("DXGKARG_CREATECONTEXT.ContextInfo"))
            .unwrap();
        assert_eq!(dma, 256 << 10, "context DMA buffer size");
        self.get(c, "DXGKARG_CREATECONTEXT.hContext")
    }

    /// CreateAllocation of one allocation carrying `priv_data`; returns (handle, the
    /// private data as the driver wrote it back).
    fn create_allocation(&mut self, priv_data: &[u8], size: u32) -> (u32, WddmAllocPriv) {
        let blob = self.emu.alloc_bytes(priv_data).unwrap();
        let info = self.alloc(self.l("DXGK_ALLOCATIONINFO"));
        self.put(info, "DXGK_ALLOCATIONINFO.pPrivateDriverData", blob);
        self.put(
            info,
            "DXGK_ALLOCATIONINFO.PrivateDriverDataSize",
            priv_data.len() as u32,
        );
        self.put(info, "DXGK_ALLOCATIONINFO.Size", size);
        let c = self.alloc(self.l("DXGKARG_CREATEALLOCATION"));
        self.put(c, "DXGKARG_CREATEALLOCATION.NumAllocations", 1);
        self.put(c, "DXGKARG_CREATEALLOCATION.pAllocationInfo", info);
        let adapter = self.adapter;
        assert_eq!(
            self.ddi("CreateAllocation", &[adapter, c]),
            STATUS_SUCCESS,
            "CreateAllocation"
        );
        let h = self.get(info, "DXGK_ALLOCATIONINFO.hAllocation");
        assert_ne!(h, 0);
        let flags = self.get(info, "DXGK_ALLOCATIONINFO.Flags");
        assert_eq!(
            flags & 1,
            1,
            "allocations are CPU-visible (system-memory aperture)"
        );
        let back = WddmAllocPriv::decode(&self.emu.read(blob, WddmAllocPriv::SIZE as u32).unwrap())
            .unwrap();
        (h, back)
    }

    /// DXGK_OPERATION_MAP_APERTURE_SEGMENT with an MDL of `pages` pages at `gpa`.
    /// `n` guest pages that are not physically contiguous (every other page of a block,
    /// in reverse order), as system memory backing an aperture allocation usually is.
    fn scattered_pages(&mut self, n: u32) -> Vec<u32> {
        let block = self.emu.alloc(2 * n * 4096, 4096).unwrap();
        (0..n).rev().map(|i| block + 2 * i * 4096).collect()
    }

    /// DXGK_OPERATION_MAP_APERTURE_SEGMENT of `pages` at the next free aperture offset
    /// (the test plays VidMm); returns the allocation's device address in the aperture.
    fn map_aperture(&mut self, allocation: u32, pages: &[u32]) -> u64 {
        let mdl_size = self.l("MDL");
        let mdl = self.alloc(mdl_size + self.emu.ptr() * pages.len() as u32);
        for (i, page) in pages.iter().enumerate() {
            let pfn = mdl + mdl_size + self.emu.ptr() * i as u32;
            self.emu.write_ptr(pfn, page >> 12).unwrap();
        }
        let offset = self.aperture_next;
        self.aperture_next += pages.len() as u32;
        let b = self.paging_buffer(5, allocation, offset, pages.len() as u32);
        self.put(b, "DXGKARG_BUILDPAGINGBUFFER.MapApertureSegment.pMdl", mdl);
        let adapter = self.adapter;
        assert_eq!(self.ddi("BuildPagingBuffer", &[adapter, b]), STATUS_SUCCESS);
        aero_protocol::pci::APERTURE_BASE + u64::from(offset) * 4096
    }

    /// DXGKARG_BUILDPAGINGBUFFER for MAP (5) or UNMAP (6) of an aperture range.
    fn paging_buffer(&mut self, operation: u32, allocation: u32, offset: u32, pages: u32) -> u32 {
        let b = self.alloc(self.l("DXGKARG_BUILDPAGINGBUFFER"));
        let f = "DXGKARG_BUILDPAGINGBUFFER";
        self.put(b, &format!("{f}.Operation"), operation);
        self.put(
            b,
            &format!("{f}.MapApertureSegment.hAllocation"),
            allocation,
        );
        self.put(b, &format!("{f}.MapApertureSegment.OffsetInPages"), offset);
        self.put(b, &format!("{f}.MapApertureSegment.NumberOfPages"), pages);
        b
    }

    fn scanout_fb(&self) -> u64 {
        u64::from(self.reg(reg::SCANOUT0_FB_GPA_LO))
            | u64::from(self.reg(reg::SCANOUT0_FB_GPA_HI)) << 32
    }

    /// The driver's GART entry for aperture page `page`.
    fn gart_entry(&self, page: u32) -> u64 {
        self.emu.r64(self.reg(reg::GART_GPA_LO) + 8 * page).unwrap()
    }

    /// Render (`stream` + allocation list of (handle, written)) then SubmitCommand with
    /// `fence`. Returns Render's and SubmitCommand's status.
    fn render_submit(
        &mut self,
        context: u32,
        stream: &[u8],
        list: &[(u32, bool)],
        fence: u32,
    ) -> (u32, u32) {
        let cmd = self.emu.alloc_bytes(stream).unwrap();
        let dma = self.alloc(256 << 10);
        let entry = self.l("DXGK_ALLOCATIONLIST");
        let alloc_list = self.alloc(entry * list.len().max(1) as u32);
        for (i, (h, written)) in list.iter().enumerate() {
            let e = alloc_list + i as u32 * entry;
            self.put(e, "DXGK_ALLOCATIONLIST.hDeviceSpecificAllocation", *h);
            self.put(e, "DXGK_ALLOCATIONLIST.Value", u32::from(*written));
        }
        let r = self.alloc(self.l("DXGKARG_RENDER"));
        self.put(r, "DXGKARG_RENDER.pCommand", cmd);
        self.put(r, "DXGKARG_RENDER.CommandLength", stream.len() as u32);
        self.put(r, "DXGKARG_RENDER.pDmaBuffer", dma);
        self.put(r, "DXGKARG_RENDER.DmaSize", 256 << 10);
        self.put(r, "DXGKARG_RENDER.pAllocationList", alloc_list);
        self.put(r, "DXGKARG_RENDER.AllocationListSize", list.len() as u32);
        let render = self.ddi("Render", &[context, r]);
        if render != STATUS_SUCCESS {
            return (render, 0);
        }
        assert_eq!(
            self.get(r, "DXGKARG_RENDER.pDmaBuffer"),
            dma + stream.len() as u32,
            "Render advances pDmaBuffer past what it consumed"
        );
        assert_eq!(
            self.emu.read(dma, stream.len() as u32).unwrap(),
            stream,
            "DMA buffer holds the stream"
        );
        let s = self.alloc(self.l("DXGKARG_SUBMITCOMMAND"));
        self.put(s, "DXGKARG_SUBMITCOMMAND.hContext", context);
        self.put(s, "DXGKARG_SUBMITCOMMAND.SubmissionFenceId", fence);
        let adapter = self.adapter;
        (render, self.ddi("SubmitCommand", &[adapter, s]))
    }

    /// DxgkDdiPresent as dxgkrnl calls it (Windows 7 DXGKARG_PRESENT, the allocation list
    /// with the source at index 1 and the destination at 2, a fresh DMA buffer), then,
    /// when it wrote something, SubmitCommand with the next fence, as dxgkrnl does with a
    /// present's DMA buffer. Returns Present's status, the stream it wrote and the
    /// MultipassOffset it left.
    fn present(&mut self, context: u32, p: &PresentCall) -> (u32, Vec<u8>, u32) {
        let dma = self.alloc(p.dma_size);
        let entry = self.l("DXGK_ALLOCATIONLIST");
        let list = self.alloc(entry * 3);
        for (i, h) in [(1, p.src), (2, p.dst)] {
            self.put(
                list + i * entry,
                "DXGK_ALLOCATIONLIST.hDeviceSpecificAllocation",
                h,
            );
        }
        let rects: Vec<u8> = p
            .sub_rects
            .iter()
            .flatten()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let subs = self.emu.alloc_bytes(&rects).unwrap();
        let a = self.alloc(self.l("DXGKARG_PRESENT"));
        let f = "DXGKARG_PRESENT";
        self.put(a, &format!("{f}.pDmaBuffer"), dma);
        self.put(a, &format!("{f}.DmaSize"), p.dma_size);
        if !p.no_list {
            self.put(a, &format!("{f}.pAllocationList"), list);
        }
        self.put(a, &format!("{f}.MultipassOffset"), p.multipass_offset);
        self.put(a, &format!("{f}.Color"), p.color);
        for (field, r) in [("DstRect", p.dst_rect), ("SrcRect", p.src_rect)] {
            let at = a + self.l(&format!("{f}.{field}"));
            for (i, v) in r.iter().enumerate() {
                self.emu.w32(at + 4 * i as u32, *v as u32).unwrap();
            }
        }
        let count = p.sub_rect_count.unwrap_or(p.sub_rects.len() as u32);
        self.put(a, &format!("{f}.SubRectCnt"), count);
        self.put(a, &format!("{f}.pDstSubRects"), subs);
        self.put(a, &format!("{f}.FlipInterval"), 1);
        self.put(a, &format!("{f}.Flags"), p.flags);
        let st = self.ddi("Present", &[context, a]);
        let written = self.get(a, &format!("{f}.pDmaBuffer")) - dma;
        let stream = self.emu.read(dma, written).unwrap();
        if written > 0 {
            let next = self.query_fence().last_submitted_fence as u32 + 1;
            let s = self.alloc(self.l("DXGKARG_SUBMITCOMMAND"));
            self.put(s, "DXGKARG_SUBMITCOMMAND.hContext", context);
            self.put(s, "DXGKARG_SUBMITCOMMAND.SubmissionFenceId", next);
            self.put(s, "DXGKARG_SUBMITCOMMAND.Flags", 2); // Present
            let adapter = self.adapter;
            assert_eq!(
                self.ddi("SubmitCommand", &[adapter, s]),
                STATUS_SUCCESS,
                "SubmitCommand of a present"
            );
            assert_eq!(
                self.emu.bus.gpu.completed_fence(),
                u64::from(next),
                "the present ran"
            );
            while self.service_interrupt() {}
            assert_eq!(
                self.nt.notifications.last(),
                Some(&Notify::DmaCompleted(next)),
                "dxgkrnl hears of the present's fence"
            );
        }
        (st, stream, self.get(a, &format!("{f}.MultipassOffset")))
    }

    /// A present run to the end the way dxgkrnl does it: while the driver answers
    /// STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER the part it wrote is submitted and Present
    /// is called again with the MultipassOffset it left. Returns the number of passes.
    fn present_all(&mut self, context: u32, p: &PresentCall) -> u32 {
        let mut p = p.clone();
        for pass in 1..=64 {
            let (st, stream, offset) = self.present(context, &p);
            assert!(!stream.is_empty(), "every pass writes a stream");
            match st {
                STATUS_SUCCESS => return pass,
                STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER => {
                    assert!(offset > p.multipass_offset, "each pass makes progress");
                    p.multipass_offset = offset;
                }
                other => panic!("Present pass {pass}: {other:#x}"),
            }
        }
        panic!("Present never finished");
    }

    /// The submission in the newest ring slot and its allocation table.
    fn newest_submission(&self) -> (SubmitDesc, Vec<AllocEntry>) {
        let ring = self.reg(reg::RING_GPA_LO);
        let tail = RingHeader::decode(&self.emu.read(ring, 64).unwrap())
            .unwrap()
            .tail;
        self.ring_entry(tail - 1)
    }

    /// The ring's tail: how many descriptors the driver ever pushed.
    fn ring_tail(&self) -> u32 {
        RingHeader::decode(&self.emu.read(self.reg(reg::RING_GPA_LO), 64).unwrap())
            .unwrap()
            .tail
    }

    /// The submit descriptor the driver put in ring slot `slot`, and its allocation table.
    fn ring_entry(&self, slot: u32) -> (SubmitDesc, Vec<AllocEntry>) {
        let ring = self.reg(reg::RING_GPA_LO);
        let header =
            RingHeader::decode(&self.emu.read(ring, RingHeader::SIZE as u32).unwrap()).unwrap();
        let at = ring
            + RingHeader::SIZE as u32
            + (slot % header.entry_count) * header.entry_stride_bytes;
        let desc =
            SubmitDesc::decode(&self.emu.read(at, SubmitDesc::SIZE as u32).unwrap()).unwrap();
        let mut entries = Vec::new();
        if desc.alloc_table_gpa != 0 {
            let t = desc.alloc_table_gpa as u32;
            let th =
                AllocTableHeader::decode(&self.emu.read(t, AllocTableHeader::SIZE as u32).unwrap())
                    .unwrap();
            for i in 0..th.entry_count {
                let e = t + AllocTableHeader::SIZE as u32 + i * th.entry_stride_bytes;
                entries.push(
                    AllocEntry::decode(&self.emu.read(e, AllocEntry::SIZE as u32).unwrap())
                        .unwrap(),
                );
            }
        }
        (desc, entries)
    }

    /// A function table whose every slot is a thunk that fails the test, then the named
    /// slots pointing at the services `prefix.name`.
    fn interface_table(&mut self, ty: &str, prefix: &str, used: &[&str]) -> u32 {
        let size = self.l(ty);
        let t = self.alloc(size);
        let trap = self
            .emu
            .thunk(&format!("{ty} (a slot this test does not model)"));
        for off in (0..size).step_by(self.emu.ptr() as usize) {
            self.emu.write_ptr(t + off, trap).unwrap();
        }
        for f in used {
            let thunk = self.emu.thunk(&format!("dxgkrnl!{prefix}.{f}"));
            self.put(t, &format!("{ty}.{f}"), thunk);
        }
        t
    }

    /// Interface table `i` of [`VIDPN_INTERFACES`].
    fn vidpn_table(&mut self, i: usize) -> u32 {
        let (ty, prefix, fns) = VIDPN_INTERFACES[i];
        self.interface_table(ty, prefix, fns)
    }

    /// A source mode: graphics, `format`, `width` x `height`, `stride`.
    fn source_mode(&mut self, width: u32, height: u32, stride: u32, format: u32) -> u32 {
        let m = self.alloc(self.l("D3DKMDT_VIDPN_SOURCE_MODE"));
        let f = "D3DKMDT_VIDPN_SOURCE_MODE";
        self.put(m, &format!("{f}.Type"), 1); // D3DKMDT_RMT_GRAPHICS
        self.put(m, &format!("{f}.Format.Graphics.PrimSurfSize.cx"), width);
        self.put(m, &format!("{f}.Format.Graphics.PrimSurfSize.cy"), height);
        self.put(m, &format!("{f}.Format.Graphics.Stride"), stride);
        self.put(m, &format!("{f}.Format.Graphics.PixelFormat"), format);
        m
    }

    /// dxgkrnl's VidPN: `paths` (0 or 1) paths with unpinned scaling and rotation, and
    /// source 0 pinned to `pinned_source` (a mode from [`source_mode`]) or not.
    fn make_vidpn(&mut self, paths: u32, pinned_source: Option<u32>) -> u32 {
        let [
            interface,
            topology_interface,
            source_interface,
            target_interface,
        ] = [0, 1, 2, 3].map(|i| self.vidpn_table(i));
        self.put(interface, "DXGK_VIDPN_INTERFACE.Version", 1);
        let path = self.alloc(self.l("D3DKMDT_VIDPN_PRESENT_PATH"));
        self.put(path, "D3DKMDT_VIDPN_PRESENT_PATH.ImportanceOrdinal", 1);
        self.put(
            path,
            "D3DKMDT_VIDPN_PRESENT_PATH.ContentTransformation.Scaling",
            254,
        ); // UNPINNED
        self.put(
            path,
            "D3DKMDT_VIDPN_PRESENT_PATH.ContentTransformation.Rotation",
            254,
        );
        self.nt.vidpn = Some(Vidpn {
            interface,
            topology_interface,
            source_interface,
            target_interface,
            paths,
            path,
            pinned_source,
            ..Default::default()
        });
        VIDPN
    }

    fn is_supported_vidpn(&mut self, vidpn: u32) -> bool {
        let s = self.alloc(self.l("DXGKARG_ISSUPPORTEDVIDPN"));
        self.put(s, "DXGKARG_ISSUPPORTEDVIDPN.hDesiredVidPn", vidpn);
        let adapter = self.adapter;
        assert_eq!(self.ddi("IsSupportedVidPn", &[adapter, s]), STATUS_SUCCESS);
        assert_eq!(
            self.nt.vidpn.as_ref().unwrap().acquired,
            0,
            "IsSupportedVidPn released what it acquired"
        );
        self.emu
            .r8(s + self.l("DXGKARG_ISSUPPORTEDVIDPN.IsVidPnSupported"))
            .unwrap()
            != 0
    }

    fn enum_cofunc_modality(&mut self, vidpn: u32) {
        let e = self.alloc(self.l("DXGKARG_ENUMVIDPNCOFUNCMODALITY"));
        self.put(
            e,
            "DXGKARG_ENUMVIDPNCOFUNCMODALITY.hConstrainingVidPn",
            vidpn,
        );
        self.put(e, "DXGKARG_ENUMVIDPNCOFUNCMODALITY.EnumPivotType", 5); // D3DKMDT_EPT_NOPIVOT
        let adapter = self.adapter;
        assert_eq!(
            self.ddi("EnumVidPnCofuncModality", &[adapter, e]),
            STATUS_SUCCESS
        );
        let v = self.nt.vidpn.as_ref().unwrap();
        assert_eq!(
            v.acquired, 0,
            "EnumVidPnCofuncModality released what it acquired"
        );
        assert!(
            v.loose_modes.is_empty(),
            "every created mode was added or released"
        );
    }

    /// (width, height) of the modes at `modes`, read through `cx`/`cy` members of `ty`.
    fn mode_sizes(&self, modes: &[u32], ty: &str, size: &str) -> Vec<(u32, u32)> {
        modes
            .iter()
            .map(|&m| {
                (
                    self.get(m, &format!("{ty}.{size}.cx")),
                    self.get(m, &format!("{ty}.{size}.cy")),
                )
            })
            .collect()
    }

    fn commit_vidpn(&mut self, vidpn: u32, primary: u32) -> u32 {
        let c = self.alloc(self.l("DXGKARG_COMMITVIDPN"));
        self.put(c, "DXGKARG_COMMITVIDPN.hFunctionalVidPn", vidpn);
        self.put(c, "DXGKARG_COMMITVIDPN.AffectedVidPnSourceId", 0);
        self.put(c, "DXGKARG_COMMITVIDPN.hPrimaryAllocation", primary);
        let adapter = self.adapter;
        self.ddi("CommitVidPn", &[adapter, c])
    }

    /// GetStandardAllocationDriverData for a shared primary: the size query, then the
    /// private data.
    fn standard_primary(&mut self, width: u32, height: u32) -> Vec<u8> {
        self.standard_allocation(1, width, height)
    }

    /// GetStandardAllocationDriverData for D3DKMDT_STANDARDALLOCATION_TYPE `kind`
    /// (1 shared primary, 2 shadow surface: both data structs start with Width, Height).
    fn standard_allocation(&mut self, kind: u32, width: u32, height: u32) -> Vec<u8> {
        let surf = self.alloc(self.l("D3DKMDT_SHAREDPRIMARYSURFACEDATA"));
        self.put(surf, "D3DKMDT_SHAREDPRIMARYSURFACEDATA.Width", width);
        self.put(surf, "D3DKMDT_SHAREDPRIMARYSURFACEDATA.Height", height);
        let g = self.alloc(self.l("DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA"));
        self.put(
            g,
            "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA.StandardAllocationType",
            kind,
        );
        self.put(
            g,
            "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA.pCreateSharedPrimarySurfaceData",
            surf,
        );
        let adapter = self.adapter;
        assert_eq!(
            self.ddi("GetStandardAllocationDriverData", &[adapter, g]),
            STATUS_SUCCESS
        );
        let size = self.get(
            g,
            "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA.AllocationPrivateDriverDataSize",
        );
        assert_eq!(size as usize, WddmAllocPriv::SIZE, "size query");
        let blob = self.alloc(size);
        self.put(
            g,
            "DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA.pAllocationPrivateDriverData",
            blob,
        );
        assert_eq!(
            self.ddi("GetStandardAllocationDriverData", &[adapter, g]),
            STATUS_SUCCESS
        );
        self.emu.read(blob, size).unwrap()
    }

    fn describe(&mut self, allocation: u32) -> (u32, u32) {
        let d = self.alloc(self.l("DXGKARG_DESCRIBEALLOCATION"));
        self.put(d, "DXGKARG_DESCRIBEALLOCATION.hAllocation", allocation);
        let adapter = self.adapter;
        assert_eq!(
            self.ddi("DescribeAllocation", &[adapter, d]),
            STATUS_SUCCESS
        );
        (
            self.get(d, "DXGKARG_DESCRIBEALLOCATION.Width"),
            self.get(d, "DXGKARG_DESCRIBEALLOCATION.Height"),
        )
    }

    fn open_allocation(&mut self, device: u32, priv_data: &[u8]) -> (u32, u32) {
        let blob = self.emu.alloc_bytes(priv_data).unwrap();
        let info = self.alloc(self.l("DXGK_OPENALLOCATIONINFO"));
        self.put(info, "DXGK_OPENALLOCATIONINFO.pPrivateDriverData", blob);
        self.put(
            info,
            "DXGK_OPENALLOCATIONINFO.PrivateDriverDataSize",
            priv_data.len() as u32,
        );
        let o = self.alloc(self.l("DXGKARG_OPENALLOCATION"));
        self.put(o, "DXGKARG_OPENALLOCATION.NumAllocations", 1);
        self.put(o, "DXGKARG_OPENALLOCATION.pOpenAllocation", info);
        let st = self.ddi("OpenAllocation", &[device, o]);
        (
            st,
            self.get(info, "DXGK_OPENALLOCATIONINFO.hDeviceSpecificAllocation"),
        )
    }

    fn close_allocation(&mut self, device: u32, h: u32) {
        let list = self.alloc(8);
        self.emu.write_ptr(list, h).unwrap();
        let c = self.alloc(self.l("DXGKARG_CLOSEALLOCATION"));
        self.put(c, "DXGKARG_CLOSEALLOCATION.NumAllocations", 1);
        self.put(c, "DXGKARG_CLOSEALLOCATION.pOpenHandleList", list);
        assert_eq!(self.ddi("CloseAllocation", &[device, c]), STATUS_SUCCESS);
    }

    fn set_visibility(&mut self, visible: bool) {
        let v = self.alloc(self.l("DXGKARG_SETVIDPNSOURCEVISIBILITY"));
        self.emu
            .w8(
                v + self.l("DXGKARG_SETVIDPNSOURCEVISIBILITY.Visible"),
                u8::from(visible),
            )
            .unwrap();
        let adapter = self.adapter;
        assert_eq!(
            self.ddi("SetVidPnSourceVisibility", &[adapter, v]),
            STATUS_SUCCESS
        );
    }

    fn set_source_address(&mut self, allocation: u32) {
        let s = self.alloc(self.l("DXGKARG_SETVIDPNSOURCEADDRESS"));
        self.put(s, "DXGKARG_SETVIDPNSOURCEADDRESS.hAllocation", allocation);
        let adapter = self.adapter;
        assert_eq!(
            self.ddi("SetVidPnSourceAddress", &[adapter, s]),
            STATUS_SUCCESS
        );
    }

    /// Advances virtual time by `ms` on both sides (device vblanks, KeQueryInterruptTime).
    fn advance_ms(&mut self, ms: u64) {
        self.nt.interrupt_time += ms * 10_000;
        self.emu
            .set_shared_times(self.nt.interrupt_time, SYSTEM_TIME)
            .unwrap();
        self.emu
            .bus
            .gpu
            .tick(self.nt.interrupt_time * 100, &mut self.emu.ram);
    }

    fn destroy_allocation(&mut self, h: u32) {
        let list = self.alloc(8);
        self.emu.write_ptr(list, h).unwrap();
        let d = self.alloc(self.l("DXGKARG_DESTROYALLOCATION"));
        self.put(d, "DXGKARG_DESTROYALLOCATION.NumAllocations", 1);
        self.put(d, "DXGKARG_DESTROYALLOCATION.pAllocationList", list);
        let adapter = self.adapter;
        assert_eq!(self.ddi("DestroyAllocation", &[adapter, d]), STATUS_SUCCESS);
    }

    /// StopDevice + RemoveDevice, then every pool block, contiguous block and I/O view
    /// the driver made must be gone.
    fn stop_and_check_leaks(&mut self) {
        let adapter = self.adapter;
        assert_eq!(self.ddi("StopDevice", &[adapter]), STATUS_SUCCESS);
        assert_eq!(
            self.reg(reg::IRQ_ENABLE),
            0,
            "StopDevice masks the device's interrupts"
        );
        assert_eq!(self.ddi("RemoveDevice", &[adapter]), STATUS_SUCCESS);
        assert!(
            self.nt.pool.is_empty(),
            "pool blocks leaked: {:x?}",
            self.nt.pool
        );
        assert!(
            self.nt.contiguous.is_empty(),
            "contiguous memory leaked: {:x?}",
            self.nt.contiguous
        );
        assert!(
            self.nt.io_views.is_empty(),
            "I/O views left mapped: {:x?}",
            self.nt.io_views
        );
        assert!(
            self.nt.open_keys.is_empty(),
            "registry keys left open: {:?}",
            self.nt.open_keys
        );
        assert!(
            self.nt.misuse.is_empty(),
            "driver misused kernel services: {:#?}",
            self.nt.misuse
        );
    }
}

fn escape_header(op: u32, size: usize) -> EscapeHeader {
    EscapeHeader {
        version: escape::ESCAPE_VERSION,
        op,
        size_bytes: size as u32,
        reserved0: 0,
    }
}

fn alloc_priv(alloc_id: u32, flags: u32, size: u64) -> Vec<u8> {
    WddmAllocPriv {
        magic: wddm_alloc::PRIV_MAGIC,
        version: 1,
        alloc_id,
        flags,
        size_bytes: size,
        ..Default::default()
    }
    .to_bytes()
    .to_vec()
}

/// The scanned-out frame must equal `model` (B, G, R, X bytes per pixel) exactly.
fn check_frame(k: &Kmd, model: &[[u8; 4]], width: u32, what: &str) {
    let mut frame = aero_gpu::Frame::default();
    k.emu
        .bus
        .gpu
        .render_scanout(&k.emu.ram, &mut frame)
        .unwrap();
    let mut wrong = 0;
    let mut first = None;
    for (i, m) in model.iter().enumerate() {
        let (x, y) = (i as u32 % width, i as u32 / width);
        let got = frame.pixel(x, y);
        if got != Some([m[2], m[1], m[0], 0xFF]) {
            wrong += 1;
            first.get_or_insert((x, y, got, *m));
        }
    }
    assert_eq!(
        wrong,
        0,
        "{what}: {wrong} pixels differ, first {first:?}; device error {:?}",
        k.emu.bus.gpu.error()
    );
}

/// Runtime presents (DxgkDdiPresent) into the primary being scanned out, as Windows 7
/// sends them for GDI without DWM: blits from GDI's shadow surface and from a windowed
/// application's back buffer, colour fills, a multipass blit, a flip; then hostile
/// arguments, each refused with nothing submitted. After every present the whole
/// scanned-out frame is compared with a model of what must be on screen.
fn check_runtime_presents(k: &mut Kmd, context: u32, primary: u32, fb_pages: &[u32]) {
    const W: u32 = 1024;
    const H: u32 = 768;
    let errors = k.emu.bus.gpu.error().count;
    // The primary (pitch 4096: one scattered page per row) starts grey.
    let grey = [0x20u8, 0x20, 0x20, 0x00];
    for page in fb_pages {
        k.emu.write(*page, &grey.repeat(1024)).unwrap();
    }
    let mut model = vec![grey; (W * H) as usize];
    check_frame(k, &model, W, "before any present");

    // GDI's shadow surface: a standard allocation the size of the primary, in system
    // memory mapped through the aperture, holding a pattern.
    let blob = k.standard_allocation(2, W, H);
    let (shadow, back) = k.create_allocation(&blob, 0);
    assert_eq!(back.flags & wddm_alloc::PRIV_FLAG_IS_PRIMARY, 0);
    let base = k.emu.alloc(W * 4 * H, 4096).unwrap();
    let pages: Vec<u32> = (0..H).map(|i| base + i * 4096).collect();
    let shadow_at = k.map_aperture(shadow, &pages);
    let shadow_px = |x: u32, y: u32| {
        [
            x as u8,
            y as u8,
            ((x >> 8) | (y >> 8) << 2) as u8 ^ 0x5A,
            0x80,
        ]
    };
    let bytes: Vec<u8> = (0..H)
        .flat_map(|y| (0..W).flat_map(move |x| shadow_px(x, y)))
        .collect();
    k.emu.write(base, &bytes).unwrap();
    let blit =
        |model: &mut [[u8; 4]], r: [i32; 4], dx: i32, dy: i32, px: &dyn Fn(u32, u32) -> [u8; 4]| {
            for y in r[1]..r[3] {
                for x in r[0]..r[2] {
                    model[(y * W as i32 + x) as usize] = px((x + dx) as u32, (y + dy) as u32);
                }
            }
        };

    // Blt shadow -> primary, 1:1, two sub-rectangles: only they change.
    let full = [0, 0, W as i32, H as i32];
    let blt = PresentCall {
        flags: PRESENT_BLT,
        src: shadow,
        dst: primary,
        src_rect: full,
        dst_rect: full,
        sub_rects: vec![[10, 20, 300, 200], [600, 500, 1024, 768]],
        ..Default::default()
    };
    assert_eq!(k.present_all(context, &blt), 1, "one pass");
    for r in &blt.sub_rects {
        blit(&mut model, *r, 0, 0, &shadow_px);
    }
    check_frame(k, &model, W, "Blt from the shadow surface");
    let (desc, table) = k.newest_submission();
    assert_ne!(desc.flags & aero_protocol::ring::SUBMIT_FLAG_PRESENT, 0);
    assert_eq!(desc.context_id, 0, "runtime presents use the KMD's context");
    assert_eq!(table.len(), 2, "source and destination listed: {table:?}");
    assert_eq!(
        (table[0].alloc_id, table[0].gpa),
        (back.alloc_id, shadow_at),
        "the source by its alloc_id and aperture address"
    );
    assert!(
        table[1].alloc_id >= wddm_alloc::ALLOC_ID_KMD_MIN && table[1].alloc_id != back.alloc_id
    );
    assert_eq!(
        table[0].flags & aero_protocol::ring::ALLOC_FLAG_READONLY,
        aero_protocol::ring::ALLOC_FLAG_READONLY,
        "the source is read-only"
    );
    assert_eq!(table[1].flags & aero_protocol::ring::ALLOC_FLAG_READONLY, 0);

    // A windowed application's back buffer (a UMD allocation with its D3D9 descriptor:
    // X8R8G8B8 64x48), blitted with an offset between source and destination.
    let mut priv_app = WddmAllocPriv::decode(&alloc_priv(0x1234, 0, 64 * 48 * 4)).unwrap();
    priv_app.reserved0 = u64::from(D3DDDIFMT_X8R8G8B8) | 64 << 32 | 48 << 48;
    let (app, _) = k.create_allocation(&priv_app.to_bytes(), 64 * 48 * 4);
    let app_base = k.emu.alloc(3 * 4096, 4096).unwrap();
    k.map_aperture(app, &[app_base, app_base + 4096, app_base + 8192]);
    let app_px = |x: u32, y: u32| [0xC0 | x as u8, y as u8, 0x33, 0xFF];
    let bytes: Vec<u8> = (0..48)
        .flat_map(|y| (0..64).flat_map(move |x| app_px(x, y)))
        .collect();
    k.emu.write(app_base, &bytes).unwrap();
    let window = PresentCall {
        flags: PRESENT_BLT,
        src: app,
        dst: primary,
        src_rect: [8, 4, 56, 44],
        dst_rect: [700, 100, 748, 140],
        ..Default::default()
    };
    assert_eq!(k.present_all(context, &window), 1);
    blit(&mut model, window.dst_rect, 8 - 700, 4 - 100, &app_px);
    check_frame(k, &model, W, "Blt from an application's back buffer");

    // ColorFill of two rectangles with a D3DCOLOR.
    let fill = PresentCall {
        flags: PRESENT_COLORFILL,
        dst: primary,
        dst_rect: full,
        sub_rects: vec![[50, 400, 250, 450], [900, 10, 1000, 60]],
        color: 0x0033_6699,
        ..Default::default()
    };
    assert_eq!(k.present_all(context, &fill), 1);
    for r in &fill.sub_rects {
        blit(&mut model, *r, 0, 0, &|_, _| [0x99, 0x66, 0x33, 0x00]);
    }
    check_frame(k, &model, W, "ColorFill");

    // A DMA buffer with room for two rectangles: five take three passes, and the
    // sub-rectangles are clipped to DstRect (the last one only partly inside).
    let multi = PresentCall {
        dst_rect: [0, 600, 512, 700],
        sub_rects: vec![
            [0, 600, 40, 610],
            [100, 620, 140, 640],
            [200, 600, 210, 700],
            [300, 650, 400, 660],
            [480, 690, 600, 760],
        ],
        src_rect: [0, 600, 512, 700],
        dma_size: 16 + 2 * 64 + 2 * 16 + 2 * 64,
        ..blt.clone()
    };
    assert_eq!(k.present_all(context, &multi), 3, "three passes");
    for r in &multi.sub_rects {
        let c = [r[0], r[1], r[2].min(512), r[3].min(700)];
        blit(&mut model, c, 0, 0, &shadow_px);
    }
    check_frame(k, &model, W, "multipass Blt");

    // A flip: the pixels are already in the new primary; the stream only carries the
    // fence, and the scanout moves with SetVidPnSourceAddress.
    let flip = PresentCall {
        flags: PRESENT_FLIP,
        src: primary,
        ..Default::default()
    };
    let (st, stream, _) = k.present(context, &flip);
    assert_eq!(st, STATUS_SUCCESS, "Flip");
    assert_eq!(stream.len(), 16, "a header-only stream");
    let (desc, table) = k.newest_submission();
    assert_ne!(desc.flags & aero_protocol::ring::SUBMIT_FLAG_PRESENT, 0);
    assert!(table.is_empty());
    k.set_source_address(primary);
    check_frame(k, &model, W, "after the flip");

    // Hostile arguments: an error, nothing written or submitted, the screen unchanged.
    let blob = alloc_priv(0x1235, 0, 4096);
    let mut unmapped_priv = WddmAllocPriv::decode(&blob).unwrap();
    unmapped_priv.reserved0 = u64::from(D3DDDIFMT_X8R8G8B8) | 16 << 32 | 16 << 48;
    let (unmapped, _) = k.create_allocation(&unmapped_priv.to_bytes(), 4096);
    let tail = k.ring_tail();
    let hostile = [
        (
            "SubRectCnt huge",
            PresentCall {
                sub_rect_count: Some(u32::MAX),
                ..blt.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "SubRectCnt past the cap",
            PresentCall {
                sub_rect_count: Some(4097),
                ..blt.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "DstRect past the primary",
            PresentCall {
                dst_rect: [0, 0, 1025, 768],
                src_rect: [0, 0, 1025, 768],
                ..blt.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "negative SrcRect",
            PresentCall {
                src_rect: [-1, 0, 1023, 768],
                ..blt.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "inverted sub-rect",
            PresentCall {
                sub_rects: vec![[300, 0, 200, 10]],
                ..blt.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "source missing",
            PresentCall {
                src: 0,
                ..blt.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "destination missing",
            PresentCall {
                dst: 0,
                ..fill.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "no allocation list",
            PresentCall {
                no_list: true,
                ..blt.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "flip without a source",
            PresentCall {
                src: 0,
                ..flip.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "source not mapped",
            PresentCall {
                src: unmapped,
                src_rect: [0, 0, 16, 16],
                dst_rect: [0, 0, 16, 16],
                ..window.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "stretch",
            PresentCall {
                src_rect: [0, 0, 32, 24],
                ..window.clone()
            },
            STATUS_NOT_SUPPORTED,
        ),
        (
            "colour key",
            PresentCall {
                flags: PRESENT_BLT | PRESENT_SRCCOLORKEY,
                ..blt.clone()
            },
            STATUS_NOT_SUPPORTED,
        ),
        (
            "no operation",
            PresentCall {
                flags: 0,
                ..blt.clone()
            },
            STATUS_NOT_SUPPORTED,
        ),
        (
            "DMA buffer too small",
            PresentCall {
                dma_size: 64,
                ..blt.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "MultipassOffset past the end",
            PresentCall {
                multipass_offset: 3,
                ..blt.clone()
            },
            STATUS_INVALID_PARAMETER,
        ),
    ];
    for (what, call, want) in hostile {
        let (st, stream, _) = k.present(context, &call);
        assert_eq!(st, want, "{what}");
        assert!(stream.is_empty(), "{what}: nothing written");
    }
    assert_eq!(k.ring_tail(), tail, "nothing submitted");
    check_frame(k, &model, W, "after hostile presents");
    assert_eq!(
        k.emu.bus.gpu.error().count,
        errors,
        "the device accepted every present the driver submitted"
    );
    // Still working afterwards.
    assert_eq!(k.present_all(context, &fill), 1);
    check_frame(k, &model, W, "ColorFill again");

    // A present the device refuses part-way: the shadow's first aperture page vanishes
    // from the GART behind the driver's back, so the device cannot read the source after
    // it created the destination's texture. Its fence still completes; nothing changes on
    // screen.
    let page = ((shadow_at - aero_protocol::pci::APERTURE_BASE) / 4096) as u32;
    let gart_entry = k.gart_entry(page);
    let gart = k.reg(reg::GART_GPA_LO);
    k.emu.write(gart + 8 * page, &[0; 8]).unwrap();
    let one_row = PresentCall {
        sub_rects: vec![[0, 0, 64, 1]],
        ..blt.clone()
    };
    let (st, stream, _) = k.present(context, &one_row);
    assert_eq!(st, STATUS_SUCCESS, "the driver cannot know");
    assert_eq!(
        k.emu.bus.gpu.error().count,
        errors + 1,
        "the device refused it"
    );
    // The first packet creates the destination's texture: handle slot base + 1.
    let handle_at = |stream: &[u8]| u32::from_le_bytes(stream[24..28].try_into().unwrap());
    let lost = handle_at(&stream) - 1;
    k.emu
        .write(gart + 8 * page, &gart_entry.to_le_bytes())
        .unwrap();
    check_frame(k, &model, W, "after a refused present");
    // Its textures may still live on the device, so the driver never uses that handle
    // slot again: small blits (the back buffer into a small surface) go round all 1365
    // slots once more, and re-creating a live handle with another size would have been a
    // device error.
    let mut small_priv = WddmAllocPriv::decode(&alloc_priv(0x1236, 0, 4096)).unwrap();
    small_priv.reserved0 = u64::from(D3DDDIFMT_X8R8G8B8) | 16 << 32 | 16 << 48;
    let (small, _) = k.create_allocation(&small_priv.to_bytes(), 4096);
    let small_page = k.emu.alloc(4096, 4096).unwrap();
    k.map_aperture(small, &[small_page]);
    let round = PresentCall {
        flags: PRESENT_BLT,
        src: app,
        dst: small,
        src_rect: [0, 0, 8, 8],
        dst_rect: [8, 8, 16, 16],
        dma_size: 1024,
        ..Default::default()
    };
    for i in 0..1366 {
        let (st, stream, _) = k.present(context, &round);
        assert_eq!(st, STATUS_SUCCESS, "round {i}");
        assert_ne!(
            handle_at(&stream) - 1,
            lost,
            "round {i} reused the lost slot"
        );
    }
    assert_eq!(k.emu.bus.gpu.error().count, errors + 1, "no further errors");
    assert_eq!(
        k.emu.read(small_page + 8 * 64 + 8 * 4, 4).unwrap(),
        app_px(0, 0),
        "the small blits landed"
    );
    for a in [shadow, app, unmapped, small] {
        k.destroy_allocation(a);
    }
}

/// The driver as build.sh made it, and its structure layouts.
fn driver(arch: Arch) -> (Vec<u8>, Layout) {
    let out = common::build_drivers(&format!("kmd-{}", arch.dir()));
    let sys = std::fs::read(out.join(arch.dir()).join("aerogpu/aerogpu.sys")).unwrap();
    let header = common::drivers_dir().join("kmd/src/aerogpu_kmd.h");
    let mut entries: Vec<String> = LAYOUT.iter().map(|e| e.to_string()).collect();
    entries.extend(
        DDI_SLOTS
            .iter()
            .filter(|s| **s != "-")
            .map(|s| format!("DRIVER_INITIALIZATION_DATA.DxgkDdi{s}")),
    );
    entries.extend(CALLBACKS.iter().map(|c| format!("DXGKRNL_INTERFACE.{c}")));
    for (ty, _, fns) in VIDPN_INTERFACES {
        entries.extend(fns.iter().map(|f| format!("{ty}.{f}")));
    }
    entries.push("DXGKRNL_INTERFACE.Version".into());
    entries.push("DXGKRNL_INTERFACE.DeviceHandle".into());
    let entries: Vec<&str> = entries.iter().map(String::as_str).collect();
    let layout = Layout::probe(
        arch.compiler(),
        &[
            "-std=gnu11",
            "-ffreestanding",
            "-D_WIN32_WINNT=0x0601",
            "-DNTDDI_VERSION=0x06010000",
            "-I/usr/share/mingw-w64/include/ddk",
        ],
        &header,
        &entries,
        &out.join(format!("layout-{}", arch.dir())),
    );
    (sys, layout)
}

#[test]
fn kmd_x86_runs_on_aero_cpu_against_the_device_model() {
    run_driver(Arch::X86);
}

#[test]
fn kmd_x64_runs_on_aero_cpu_against_the_device_model() {
    run_driver(Arch::X64);
}

/// dxgkrnl's life of the driver: start, queries, submissions (valid, refused by the
/// device, malformed), display, power, shared surfaces, teardown.
fn run_driver(arch: Arch) {
    let (sys, layout) = driver(arch);
    let mb_max = arch.nonlocal_mb_max();
    let mut k = Kmd::start(arch, &sys, layout, |nt| {
        // HKR\Parameters\NonLocalMemorySizeMB above the limit: clamped to 1024 / 2048.
        nt.set_registry(&format!("{HKR}\\Parameters"), "NonLocalMemorySizeMB", 4096);
        // The x86 run also sets the mode overrides (Services\aerogpu\Parameters); the x64
        // run keeps the EDID's defaults, so both paths of the mode list run.
        if arch == Arch::X86 {
            let params = format!("{SERVICE_KEY}\\Parameters");
            for (name, v) in [
                ("PreferredWidth", 1280),
                ("PreferredHeight", 720),
                ("MaxWidth", 1600),
                ("MaxHeight", 1200),
            ] {
                nt.set_registry(&params, name, v);
            }
        }
    });

    // ---- StartDevice programmed the device -------------------------------------------
    let ring_gpa = k.reg(reg::RING_GPA_LO);
    assert!(
        k.nt.contiguous.contains_key(&ring_gpa),
        "ring in the driver's contiguous memory"
    );
    assert_eq!(k.reg(reg::RING_GPA_HI), 0);
    assert_eq!(
        k.reg(reg::RING_SIZE_BYTES),
        64 + 256 * 64,
        "header + 256 descriptors"
    );
    assert_eq!(k.reg(reg::RING_CONTROL) & 1, 1, "ring enabled");
    let fence_page = k.reg(reg::FENCE_GPA_LO);
    assert!(
        k.nt.contiguous.contains_key(&fence_page),
        "fence page in contiguous memory"
    );
    assert_eq!(
        k.reg(reg::IRQ_ENABLE),
        (1 << 0) | (1 << 31),
        "FENCE and ERROR interrupts, no vblank yet"
    );
    let header = RingHeader::decode(&k.emu.read(ring_gpa, 64).unwrap()).unwrap();
    assert_eq!(header.magic, aero_protocol::ring::RING_MAGIC);
    assert_eq!(header.entry_count, 256);
    assert_eq!(
        k.nt.io_views.get(&BAR0),
        Some(&BAR0_SIZE),
        "BAR0 (the fourth resource) mapped"
    );

    // ---- Adapter queries ---------------------------------------------------------------
    let caps_size = k.l("DXGK_DRIVERCAPS");
    let (st, caps) = k.query_adapter_info(QAI_DRIVERCAPS, caps_size + 64);
    assert_eq!(st, STATUS_SUCCESS);
    assert_eq!(
        k.get(caps, "DXGK_DRIVERCAPS.ApertureSegmentCommitLimit"),
        mb_max << 20,
        "NonLocalMemorySizeMB clamped to the per-architecture maximum"
    );
    assert_eq!(k.get(caps, "DXGK_DRIVERCAPS.MaxAllocationListSlotId"), 256);
    assert_eq!(
        k.get(caps, "DXGK_DRIVERCAPS.MaxPointerWidth"),
        aero_protocol::pci::CURSOR_MAX_DIM
    );
    assert_eq!(
        k.get(caps, "DXGK_DRIVERCAPS.PointerCaps"),
        0x2 | 0x4,
        "colour and masked-colour cursors"
    );
    assert_eq!(k.get(caps, "DXGK_DRIVERCAPS.GpuEngineTopology"), 1);
    let (st, _) = k.query_adapter_info(QAI_DRIVERCAPS, caps_size - 4);
    assert_eq!(st, STATUS_BUFFER_TOO_SMALL);

    let qs = k.l("DXGK_QUERYSEGMENTOUT");
    let (st, seg) = k.query_adapter_info(QAI_QUERYSEGMENT, qs); // the count pass
    assert_eq!(st, STATUS_SUCCESS);
    assert_eq!(k.get(seg, "DXGK_QUERYSEGMENTOUT.NbSegment"), 1);
    let descs = k.alloc(k.l("DXGK_SEGMENTDESCRIPTOR"));
    let q = k.alloc(k.l("DXGKARG_QUERYADAPTERINFO"));
    let out = k.alloc(qs);
    k.put(out, "DXGK_QUERYSEGMENTOUT.pSegmentDescriptor", descs);
    k.put(q, "DXGKARG_QUERYADAPTERINFO.Type", QAI_QUERYSEGMENT);
    k.put(q, "DXGKARG_QUERYADAPTERINFO.pOutputData", out);
    k.put(q, "DXGKARG_QUERYADAPTERINFO.OutputDataSize", qs);
    let adapter = k.adapter;
    assert_eq!(k.ddi("QueryAdapterInfo", &[adapter, q]), STATUS_SUCCESS);
    assert_eq!(k.get(descs, "DXGK_SEGMENTDESCRIPTOR.Size"), mb_max << 20);
    assert_eq!(
        k.get(descs, "DXGK_SEGMENTDESCRIPTOR.Flags") & 0x1,
        0x1,
        "an aperture segment"
    );

    let (st, umd) = k.query_adapter_info(QAI_UMDRIVERPRIVATE, QueryDeviceV2Out::SIZE as u32);
    assert_eq!(st, STATUS_SUCCESS);
    let umd =
        QueryDeviceV2Out::decode(&k.emu.read(umd, QueryDeviceV2Out::SIZE as u32).unwrap()).unwrap();
    assert_eq!(umd.detected_mmio_magic, k.reg(reg::MAGIC));
    assert_eq!(umd.abi_version_u32, k.reg(reg::ABI_VERSION));
    assert_eq!(
        umd.features,
        u64::from(k.reg(reg::FEATURES_LO)) | u64::from(k.reg(reg::FEATURES_HI)) << 32
    );

    // ---- The monitor child and its EDID ------------------------------------------------
    let child = k.l("DXGK_CHILD_DESCRIPTOR");
    let rel = k.alloc(2 * child);
    assert_eq!(
        k.ddi("QueryChildRelations", &[adapter, rel, 2 * child]),
        STATUS_SUCCESS
    );
    assert_eq!(
        k.get(rel, "DXGK_CHILD_DESCRIPTOR.ChildDeviceType"),
        1,
        "TypeVideoOutput"
    );
    assert_eq!(
        k.get(rel, "DXGK_CHILD_DESCRIPTOR.ChildCapabilities.HpdAwareness"),
        1,
        "always connected"
    );
    let edid = k.alloc(128);
    let dd = k.alloc(k.l("DXGK_DEVICE_DESCRIPTOR"));
    k.put(dd, "DXGK_DEVICE_DESCRIPTOR.DescriptorLength", 128);
    k.put(dd, "DXGK_DEVICE_DESCRIPTOR.DescriptorBuffer", edid);
    assert_eq!(
        k.ddi("QueryDeviceDescriptor", &[adapter, 0, dd]),
        STATUS_SUCCESS
    );
    let edid = k.emu.read(edid, 128).unwrap();
    assert_eq!(
        &edid[..8],
        &[0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0],
        "EDID header"
    );
    assert_eq!(
        edid.iter().fold(0u8, |s, b| s.wrapping_add(*b)),
        0,
        "EDID checksum"
    );

    // ---- Escape: what dbgctl and the UMD see ---------------------------------------------
    let f = k.query_fence();
    assert_eq!((f.last_submitted_fence, f.last_completed_fence), (0, 0));

    // ---- A device, a context, an allocation backed by guest pages ------------------------
    let device = k.create_device();
    let context = k.create_context(device);
    let (buffer, back) = k.create_allocation(&alloc_priv(7, 0, 0), 64 << 10);
    assert_eq!(back.alloc_id, 7, "a UMD alloc_id is kept");
    assert_eq!(
        back.size_bytes,
        64 << 10,
        "the size is written back for every process"
    );
    let backing = k.scattered_pages(16);
    let buffer_ap = k.map_aperture(buffer, &backing);
    let (other, back) = k.create_allocation(&alloc_priv(0, 0, 4096), 0);
    assert!(
        back.alloc_id >= wddm_alloc::ALLOC_ID_KMD_MIN,
        "alloc_id 0 gets a KMD-range id"
    );
    let other_backing = k.scattered_pages(1);
    let other_ap = k.map_aperture(other, &other_backing);
    // The GART maps each aperture page onto its own scattered page.
    let gart = k.reg(reg::GART_GPA_LO);
    assert!(
        k.nt.contiguous.contains_key(&gart),
        "GART table in contiguous memory"
    );
    assert_eq!(
        k.reg(reg::GART_ENTRIES),
        mb_max * 256,
        "one entry per aperture page"
    );
    for (i, page) in backing.iter().enumerate() {
        assert_eq!(
            k.gart_entry(i as u32),
            u64::from(*page) | 1,
            "GART entry {i}"
        );
    }
    assert_eq!(k.gart_entry(16), u64::from(other_backing[0]) | 1);
    assert_eq!(other_ap, buffer_ap + 16 * 4096);

    // ---- Submission 1: creates a buffer in the allocation and uploads into it -----------
    // Handles from the UMD's range (its first chunk starts at 0x1000; below is the KMD's).
    let mut w = CmdStreamWriter::new();
    w.create_buffer(0x1000, cmd::RESOURCE_USAGE_VERTEX_BUFFER, 4096, 7, 0);
    w.upload(0x1000, 0, &[0xA5; 64]);
    let stream = w.finish();
    let (r, s) = k.render_submit(context, &stream, &[(buffer, true)], 1);
    assert_eq!(
        (r, s),
        (STATUS_SUCCESS, STATUS_SUCCESS),
        "Render / SubmitCommand"
    );
    assert_eq!(
        k.emu.bus.gpu.completed_fence(),
        1,
        "the device ran the submission"
    );
    assert_eq!(
        k.emu.bus.gpu.error().count,
        0,
        "the device found the submission valid"
    );
    let (desc, table) = k.ring_entry(0);
    assert_eq!(desc.signal_fence, 1);
    let first_context_id = desc.context_id;
    assert_ne!(
        first_context_id, 0,
        "a device context's submissions carry its own id"
    );
    assert_eq!(
        k.emu.bus.gpu.processor().context(),
        first_context_id,
        "the device switched to it"
    );
    assert_eq!(desc.cmd_size_bytes as usize, stream.len());
    assert_eq!(
        k.emu
            .read(desc.cmd_gpa as u32, desc.cmd_size_bytes)
            .unwrap(),
        stream,
        "the ring names a copy of the stream"
    );
    assert_eq!(table.len(), 1);
    assert_eq!(
        (table[0].alloc_id, table[0].gpa, table[0].size_bytes),
        (7, buffer_ap, 64 << 10)
    );
    assert_eq!(table[0].flags & 1, 0, "written allocation is not READONLY");
    assert!(k.service_interrupt(), "the fence interrupt is the driver's");
    assert_eq!(k.nt.notifications, [Notify::DmaCompleted(1)]);
    let page =
        aero_protocol::ring::FencePage::decode(&k.emu.read(fence_page, 64).unwrap()).unwrap();
    assert_eq!(page.completed_fence, 1, "fence page");
    let qf = k.alloc(k.l("DXGKARG_QUERYCURRENTFENCE"));
    assert_eq!(k.ddi("QueryCurrentFence", &[adapter, qf]), STATUS_SUCCESS);
    assert_eq!(k.get(qf, "DXGKARG_QUERYCURRENTFENCE.CurrentFence"), 1);

    // ---- Submission 2: a writeback into an allocation listed read-only ------------------
    // The driver marks it READONLY (WriteOperation = 0), so the device must refuse the
    // writeback, latch the error, complete the fence anyway and keep running.
    let mut w = CmdStreamWriter::new();
    w.create_buffer(
        0x1001,
        cmd::RESOURCE_USAGE_VERTEX_BUFFER,
        4096,
        back.alloc_id,
        0,
    );
    w.push(
        Opcode::CopyBuffer,
        &cmd::CopyBuffer {
            dst_buffer: 0x1001,
            src_buffer: 0x1000,
            size_bytes: 64,
            flags: cmd::COPY_FLAG_WRITEBACK_DST,
            ..Default::default()
        },
        &[],
    );
    let (r, s) = k.render_submit(context, &w.finish(), &[(buffer, false), (other, false)], 2);
    assert_eq!((r, s), (STATUS_SUCCESS, STATUS_SUCCESS));
    let (_, table) = k.ring_entry(1);
    assert!(
        table.iter().all(|e| e.flags & 1 == 1),
        "unwritten allocations are READONLY: {table:?}"
    );
    assert_eq!(k.emu.bus.gpu.completed_fence(), 2);
    assert_eq!(
        k.emu.bus.gpu.error().count,
        1,
        "the device refused the read-only writeback"
    );
    assert!(k.service_interrupt());
    assert_eq!(
        k.nt.notifications[1],
        Notify::DmaCompleted(2),
        "the failing submission still completes"
    );
    let f = k.query_fence();
    assert_eq!((f.last_submitted_fence, f.last_completed_fence), (2, 2));
    assert_eq!(
        (f.error_irq_count, f.last_error_fence),
        (1, 2),
        "the ISR recorded the device error"
    );

    // ---- Submission 3: the device still works; 32-bit fence ids widen --------------------
    let (r, s) = k.render_submit(context, &CmdStreamWriter::new().finish(), &[], 3);
    assert_eq!((r, s), (STATUS_SUCCESS, STATUS_SUCCESS));
    assert_eq!(k.emu.bus.gpu.completed_fence(), 3);
    assert!(k.service_interrupt());
    assert_eq!(k.nt.notifications[2], Notify::DmaCompleted(3));
    assert!(!k.service_interrupt(), "no interrupt left");

    // A stream that is not an AeroGPU stream never reaches the ring.
    let (r, _) = k.render_submit(context, &[0u8; 32], &[], 4);
    assert_ne!(r, STATUS_SUCCESS, "Render refuses a malformed stream");
    assert_eq!(k.query_fence().last_submitted_fence, 3);

    // ---- Escapes that are off by default -------------------------------------------------
    let mut req = vec![0u8; 4136];
    req[..16].copy_from_slice(
        &EscapeHeader {
            version: escape::ESCAPE_VERSION,
            op: escape::OP_READ_GPA,
            size_bytes: 4136,
            reserved0: 0,
        }
        .to_bytes(),
    );
    let (st, _) = k.escape(&req);
    assert_eq!(st, STATUS_NOT_SUPPORTED, "READ_GPA is off unless enabled");
    let (st, _) = k.map_shared_handle(0x44);
    assert_eq!(
        st, STATUS_NOT_SUPPORTED,
        "MAP_SHARED_HANDLE is off unless enabled"
    );

    // ---- VidPN: what dxgkrnl asks before it sets a mode ---------------------------------
    // Nothing pinned: the driver offers its mode list on both sides of the path, and
    // reports the path's transformation and copy-protection support.
    let vidpn = k.make_vidpn(1, None);
    assert!(
        k.is_supported_vidpn(vidpn),
        "a VidPN with nothing pinned can be completed"
    );
    k.enum_cofunc_modality(vidpn);
    let v = k.nt.vidpn.as_ref().unwrap();
    assert!(
        v.source_assigned && v.target_assigned,
        "both mode sets assigned"
    );
    let (source_modes, target_modes) = (v.new_source_modes.clone(), v.new_target_modes.clone());
    let updates = v.path_updates.clone();
    let sizes = k.mode_sizes(
        &source_modes,
        "D3DKMDT_VIDPN_SOURCE_MODE",
        "Format.Graphics.PrimSurfSize",
    );
    assert!(sizes.contains(&(1024, 768)), "1024x768 offered: {sizes:?}");
    if arch == Arch::X86 {
        assert_eq!(
            sizes[0],
            (1280, 720),
            "PreferredWidth/Height first: {sizes:?}"
        );
        assert!(
            sizes.iter().all(|&(w, h)| w <= 1600 && h <= 1200),
            "MaxWidth/MaxHeight cap the list: {sizes:?}"
        );
    } else {
        assert_eq!(
            sizes[0],
            (1920, 1080),
            "the EDID's preferred mode first: {sizes:?}"
        );
    }
    assert!(sizes.len() >= 3, "a mode list, not one mode: {sizes:?}");
    for (&m, &(w, _)) in source_modes.iter().zip(&sizes) {
        let f = "D3DKMDT_VIDPN_SOURCE_MODE";
        assert_eq!(k.get(m, &format!("{f}.Type")), 1, "graphics mode");
        assert_eq!(
            k.get(m, &format!("{f}.Format.Graphics.PixelFormat")),
            D3DDDIFMT_X8R8G8B8
        );
        assert_eq!(k.get(m, &format!("{f}.Format.Graphics.Stride")), 4 * w);
    }
    let target_sizes = k.mode_sizes(
        &target_modes,
        "D3DKMDT_VIDPN_TARGET_MODE",
        "VideoSignalInfo.ActiveSize",
    );
    assert_eq!(
        target_sizes, sizes,
        "the identity path: the same sizes on the target"
    );
    for &m in &target_modes {
        let f = "D3DKMDT_VIDPN_TARGET_MODE.VideoSignalInfo.VSyncFreq";
        assert_eq!(
            (
                k.get(m, &format!("{f}.Numerator")),
                k.get(m, &format!("{f}.Denominator"))
            ),
            (60, 1),
            "60 Hz"
        );
    }
    assert_eq!(
        updates.len(),
        1,
        "pfnUpdatePathSupportInfo called for the path"
    );
    let field = |name: &str| {
        let off = k.l(&format!("D3DKMDT_VIDPN_PRESENT_PATH.{name}")) as usize;
        u32::from_le_bytes(updates[0][off..off + 4].try_into().unwrap())
    };
    assert_eq!(
        field("ContentTransformation.ScalingSupport") & 1,
        1,
        "identity scaling supported"
    );
    assert_eq!(
        field("ContentTransformation.RotationSupport") & 1,
        1,
        "identity rotation supported"
    );
    assert_eq!(
        field("CopyProtection.CopyProtectionSupport") & 1,
        1,
        "no copy protection"
    );
    assert_eq!(
        field("ContentTransformation.Scaling"),
        254,
        "scaling left unpinned"
    );

    // Source pinned to 1024x768: the target offers exactly that, the source set stays.
    let mode = k.source_mode(1024, 768, 4096, D3DDDIFMT_X8R8G8B8);
    let vidpn = k.make_vidpn(1, Some(mode));
    assert!(k.is_supported_vidpn(vidpn), "a listed mode is supported");
    k.enum_cofunc_modality(vidpn);
    let v = k.nt.vidpn.as_ref().unwrap();
    assert!(
        !v.source_assigned,
        "the pinned source's mode set is not replaced"
    );
    let target_modes = v.new_target_modes.clone();
    assert_eq!(
        k.mode_sizes(
            &target_modes,
            "D3DKMDT_VIDPN_TARGET_MODE",
            "VideoSignalInfo.ActiveSize"
        ),
        [(1024, 768)],
        "only the cofunctional target mode"
    );
    // Unsupported pins and topologies.
    let odd = k.source_mode(1000, 700, 4000, D3DDDIFMT_X8R8G8B8);
    let vidpn = k.make_vidpn(1, Some(odd));
    assert!(
        !k.is_supported_vidpn(vidpn),
        "an unlisted size is not supported"
    );
    let pal = k.source_mode(1024, 768, 1024, 41); // D3DDDIFMT_P8
    let vidpn = k.make_vidpn(1, Some(pal));
    assert!(
        !k.is_supported_vidpn(vidpn),
        "a palettized format is not supported"
    );
    let vidpn = k.make_vidpn(0, None);
    assert!(
        k.is_supported_vidpn(vidpn),
        "an empty topology is supported"
    );
    let full_hd = k.source_mode(1920, 1080, 7680, D3DDDIFMT_X8R8G8B8);
    let vidpn = k.make_vidpn(1, Some(full_hd));
    assert_eq!(
        k.is_supported_vidpn(vidpn),
        arch == Arch::X64,
        "1920x1080: supported by default, refused above MaxWidth/MaxHeight"
    );

    // The monitor's modes: the same list, the first one preferred.
    k.nt.vidpn.as_mut().unwrap().loose_modes.clear();
    let monitor_interface = k.vidpn_table(4);
    let r = k.alloc(k.l("DXGKARG_RECOMMENDMONITORMODES"));
    k.put(
        r,
        "DXGKARG_RECOMMENDMONITORMODES.hMonitorSourceModeSet",
        MONITOR_SET,
    );
    k.put(
        r,
        "DXGKARG_RECOMMENDMONITORMODES.pMonitorSourceModeSetInterface",
        monitor_interface,
    );
    assert_eq!(
        k.ddi("RecommendMonitorModes", &[adapter, r]),
        STATUS_SUCCESS
    );
    let monitor_modes = k.nt.vidpn.as_ref().unwrap().monitor_modes.clone();
    assert_eq!(
        k.mode_sizes(
            &monitor_modes,
            "D3DKMDT_MONITOR_SOURCE_MODE",
            "VideoSignalInfo.ActiveSize"
        ),
        sizes,
        "the monitor offers the adapter's modes"
    );
    let preference: Vec<u32> = monitor_modes
        .iter()
        .map(|&m| k.get(m, "D3DKMDT_MONITOR_SOURCE_MODE.Preference"))
        .collect();
    assert_eq!(preference[0], 1, "the first mode is preferred");
    assert!(
        preference[1..].iter().all(|&p| p == 2),
        "the others are not: {preference:?}"
    );

    // ---- Display: a primary, CommitVidPn, flips, the cursor, vblank ----------------------
    let blob = k.standard_primary(1024, 768);
    let (primary, back) = k.create_allocation(&blob, 0);
    assert!(back.alloc_id >= wddm_alloc::ALLOC_ID_KMD_MIN);
    assert_eq!(
        back.flags & wddm_alloc::PRIV_FLAG_IS_PRIMARY,
        wddm_alloc::PRIV_FLAG_IS_PRIMARY
    );
    assert_eq!(back.size_bytes, 4096 * 768, "pitch 4096 x 768 rows");
    assert_eq!(
        k.describe(primary),
        (1024, 768),
        "DescribeAllocation reports the primary's size"
    );
    let fb_pages = k.scattered_pages(768);
    let fb = k.map_aperture(primary, &fb_pages);
    k.set_visibility(true);
    let mode = k.source_mode(1024, 768, 4096, D3DDDIFMT_X8R8G8B8);
    let vidpn = k.make_vidpn(1, Some(mode));
    assert_eq!(
        k.commit_vidpn(vidpn, primary),
        STATUS_SUCCESS,
        "CommitVidPn"
    );
    assert_eq!(
        k.nt.vidpn.as_ref().unwrap().acquired,
        0,
        "every VidPN object acquired was released"
    );
    let sc = k.emu.bus.gpu.scanout();
    assert_eq!(
        (
            k.reg(reg::SCANOUT0_ENABLE),
            k.reg(reg::SCANOUT0_WIDTH),
            k.reg(reg::SCANOUT0_HEIGHT)
        ),
        (1, 1024, 768),
        "scanout on, in the committed mode: {sc:?}"
    );
    assert_eq!(k.reg(reg::SCANOUT0_PITCH_BYTES), 4096);
    assert_eq!(
        k.scanout_fb(),
        fb,
        "the scanout reads the primary through the aperture"
    );
    // A flip to a second primary moves the scanout.
    let blob = k.standard_primary(1024, 768);
    let (back_buffer, _) = k.create_allocation(&blob, 0);
    let fb2_pages = k.scattered_pages(768);
    let fb2 = k.map_aperture(back_buffer, &fb2_pages);
    k.set_source_address(back_buffer);
    assert_eq!(
        (k.reg(reg::SCANOUT0_ENABLE), k.scanout_fb()),
        (1, fb2),
        "flipped"
    );
    // What the device shows comes from the scattered pages: row 0 is page 0, row 1 page 1.
    k.emu.write(fb2_pages[0], &[0x11, 0x22, 0x33, 0]).unwrap();
    k.emu.write(fb2_pages[1], &[0x44, 0x55, 0x66, 0]).unwrap();
    let mut frame = aero_gpu::Frame::default();
    k.emu
        .bus
        .gpu
        .render_scanout(&k.emu.ram, &mut frame)
        .unwrap();
    assert_eq!((frame.width, frame.height), (1024, 768));
    assert_eq!(
        frame.pixel(0, 0),
        Some([0x33, 0x22, 0x11, 0xFF]),
        "row 0: aperture page 0"
    );
    assert_eq!(
        frame.pixel(0, 1),
        Some([0x66, 0x55, 0x44, 0xFF]),
        "row 1: aperture page 1"
    );
    k.set_visibility(false);
    assert_eq!(k.reg(reg::SCANOUT0_ENABLE), 0, "hidden source: scanout off");
    k.set_visibility(true);
    assert_eq!(k.reg(reg::SCANOUT0_ENABLE), 1);
    check_runtime_presents(&mut k, context, back_buffer, &fb2_pages);

    // Hardware cursor: a 32x32 colour shape, then a position.
    let pixels: Vec<u8> = (0..32 * 32 * 4).map(|i| (i * 7) as u8).collect();
    let px = k.emu.alloc_bytes(&pixels).unwrap();
    let shape = k.alloc(k.l("DXGKARG_SETPOINTERSHAPE"));
    for (f, v) in [
        ("Flags", 0x2),
        ("Width", 32),
        ("Height", 32),
        ("Pitch", 128),
        ("pPixels", px),
        ("XHot", 3),
        ("YHot", 4),
    ] {
        k.put(shape, &format!("DXGKARG_SETPOINTERSHAPE.{f}"), v);
    }
    assert_eq!(k.ddi("SetPointerShape", &[adapter, shape]), STATUS_SUCCESS);
    let pos = k.alloc(k.l("DXGKARG_SETPOINTERPOSITION"));
    k.put(pos, "DXGKARG_SETPOINTERPOSITION.X", 100);
    k.put(pos, "DXGKARG_SETPOINTERPOSITION.Y", (-5i32) as u32);
    k.put(pos, "DXGKARG_SETPOINTERPOSITION.Flags", 1);
    assert_eq!(k.ddi("SetPointerPosition", &[adapter, pos]), STATUS_SUCCESS);
    let c = k.emu.bus.gpu.cursor();
    assert!(c.enable, "cursor visible: {c:?}");
    assert_eq!(
        (c.x, c.y, c.width, c.height, c.hot_x, c.hot_y),
        (100, -5, 32, 32, 3, 4)
    );
    let cursor_gpa = c.fb_gpa as u32;
    assert!(
        k.nt.contiguous.contains_key(&cursor_gpa),
        "cursor image in contiguous memory"
    );
    for row in [0u32, 31] {
        assert_eq!(
            k.emu.read(cursor_gpa + row * c.pitch_bytes, 128).unwrap(),
            pixels[(row * 128) as usize..][..128],
            "cursor row {row} copied"
        );
    }

    // Vblank interrupts only while dxgkrnl asks for them.
    k.advance_ms(50);
    assert!(
        !k.service_interrupt(),
        "no vblank interrupt before ControlInterrupt"
    );
    assert_eq!(k.ddi("ControlInterrupt", &[adapter, 3, 1]), STATUS_SUCCESS); // CRTC_VSYNC on
    assert_ne!(k.reg(reg::IRQ_ENABLE) & (1 << 1), 0, "vblank enabled");
    k.advance_ms(17);
    assert!(k.service_interrupt(), "vblank interrupt");
    assert_eq!(
        k.nt.notifications.last(),
        Some(&Notify::Vsync(fb2)),
        "vsync names the scanned-out surface"
    );
    let gs = k.alloc(k.l("DXGKARG_GETSCANLINE"));
    assert_eq!(k.ddi("GetScanLine", &[adapter, gs]), STATUS_SUCCESS);
    assert!(
        k.get(gs, "DXGKARG_GETSCANLINE.ScanLine") < 1024,
        "scan line in range"
    );
    assert_eq!(k.ddi("ControlInterrupt", &[adapter, 3, 0]), STATUS_SUCCESS);
    assert_eq!(
        k.reg(reg::IRQ_ENABLE) & (1 << 1),
        0,
        "vblank disabled again"
    );

    // ---- Power: D3 then D0 keeps the display and the ring working ------------------------
    assert_eq!(
        k.ddi("SetPowerState", &[adapter, 0xFFFF_FFFF, 4, 0]),
        STATUS_SUCCESS
    ); // D3
    assert_eq!(
        (k.reg(reg::SCANOUT0_ENABLE), k.reg(reg::IRQ_ENABLE)),
        (0, 0),
        "D3: scanout and interrupts off"
    );
    let req = escape::SelftestInout {
        hdr: escape_header(escape::OP_SELFTEST, escape::SelftestInout::SIZE),
        ..Default::default()
    };
    let (_, out) = k.escape(&req.to_bytes());
    let t = escape::SelftestInout::decode(&out).unwrap();
    assert_eq!(
        (t.passed, t.error_code),
        (0, escape::DBGCTL_SELFTEST_ERR_NOT_READY),
        "selftest refuses in D3"
    );
    let fence = k.query_fence().last_submitted_fence as u32;
    let (r, s) = k.render_submit(context, &CmdStreamWriter::new().finish(), &[], fence + 1);
    assert_eq!(r, STATUS_SUCCESS);
    assert_ne!(s, STATUS_SUCCESS, "no submission reaches a device in D3");
    assert_eq!(
        k.ddi("SetPowerState", &[adapter, 0xFFFF_FFFF, 1, 0]),
        STATUS_SUCCESS
    ); // D0
    assert_eq!(
        (k.reg(reg::SCANOUT0_ENABLE), k.scanout_fb()),
        (1, fb2),
        "D0: scanout restored"
    );
    assert!(k.emu.bus.gpu.cursor().enable, "D0: cursor restored");
    assert_eq!(k.reg(reg::RING_CONTROL) & 1, 1, "D0: ring running");
    let (r, s) = k.render_submit(context, &CmdStreamWriter::new().finish(), &[], fence + 2);
    assert_eq!((r, s), (STATUS_SUCCESS, STATUS_SUCCESS));
    assert_eq!(
        k.emu.bus.gpu.completed_fence(),
        u64::from(fence + 2),
        "submissions complete after resume"
    );
    while k.service_interrupt() {}
    assert_eq!(
        k.nt.notifications.last(),
        Some(&Notify::DmaCompleted(fence + 2))
    );

    // ---- A shared surface: the last close releases its token on the device --------------
    let (shared, back) =
        k.create_allocation(&alloc_priv(9, wddm_alloc::PRIV_FLAG_IS_SHARED, 0), 4096);
    let token = back.share_token;
    assert_ne!(token, 0, "a shared allocation gets a share token");
    let device2 = k.create_device();
    let (st, opened) = k.open_allocation(device2, &back.to_bytes());
    assert_eq!(st, STATUS_SUCCESS, "another process opens it");
    let ring_tail = |k: &Kmd| {
        RingHeader::decode(&k.emu.read(k.reg(reg::RING_GPA_LO), 64).unwrap())
            .unwrap()
            .tail
    };
    let tail = ring_tail(&k);
    k.close_allocation(device2, opened);
    assert_eq!(
        ring_tail(&k),
        tail,
        "not the last reference: nothing submitted"
    );
    k.destroy_allocation(shared);
    assert_eq!(
        ring_tail(&k),
        tail + 1,
        "the last close submits RELEASE_SHARED_SURFACE"
    );
    let (desc, _) = k.ring_entry(tail);
    assert_ne!(
        desc.flags & aero_protocol::ring::SUBMIT_FLAG_NO_IRQ,
        0,
        "an internal submission raises no interrupt"
    );
    assert_eq!(
        desc.context_id, 0,
        "internal submissions are the KMD's context 0"
    );
    let stream = k
        .emu
        .read(desc.cmd_gpa as u32, desc.cmd_size_bytes)
        .unwrap();
    let op = (Opcode::ReleaseSharedSurface as u32).to_le_bytes();
    let at = stream
        .windows(4)
        .position(|w| w == op)
        .expect("a RELEASE_SHARED_SURFACE packet");
    assert!(
        stream[at..].windows(8).any(|w| w == token.to_le_bytes()),
        "for this token"
    );
    assert_eq!(
        k.emu.bus.gpu.error().count,
        2,
        "the device accepted the release (the errors are submission 2's and the refused present's)"
    );
    assert_eq!(k.ddi("DestroyDevice", &[device2]), STATUS_SUCCESS);
    k.destroy_allocation(primary);
    k.destroy_allocation(back_buffer);

    // ---- dbgctl's escapes, runtime presents, paging buffers, timeout recovery ----------
    let selftest = |k: &mut Kmd| {
        let req = escape::SelftestInout {
            hdr: escape_header(escape::OP_SELFTEST, escape::SelftestInout::SIZE),
            timeout_ms: 500,
            ..Default::default()
        };
        let (st, out) = k.escape(&req.to_bytes());
        assert_eq!(st, STATUS_SUCCESS, "SELFTEST escape");
        escape::SelftestInout::decode(&out).unwrap()
    };
    let tail = ring_tail(&k);
    let t = selftest(&mut k);
    assert_eq!(
        (t.passed, t.error_code),
        (1, 0),
        "selftest passes on a working device"
    );
    assert_eq!(
        ring_tail(&k),
        tail + 1,
        "the selftest went through the ring"
    );

    let req = escape::DumpRingV2Inout {
        hdr: escape_header(escape::OP_DUMP_RING_V2, escape::DumpRingV2Inout::SIZE),
        ..Default::default()
    };
    let (st, out) = k.escape(&req.to_bytes());
    assert_eq!(st, STATUS_SUCCESS, "DUMP_RING_V2");
    let dump = escape::DumpRingV2Inout::decode(&out).unwrap();
    assert_eq!(
        (dump.head, dump.tail),
        (tail + 1, tail + 1),
        "the device consumed everything"
    );
    assert!(dump.desc_count >= 1 && dump.desc_count <= 32);
    let newest = dump.desc[dump.desc_count as usize - 1];
    let (desc, _) = k.ring_entry(tail);
    assert_eq!(
        (newest.signal_fence, newest.cmd_gpa),
        (desc.signal_fence, desc.cmd_gpa),
        "newest descriptor last"
    );

    let req = escape::QueryVblankOut {
        hdr: escape_header(escape::OP_QUERY_VBLANK, escape::QueryVblankOut::SIZE),
        ..Default::default()
    };
    let (st, out) = k.escape(&req.to_bytes());
    assert_eq!(st, STATUS_SUCCESS, "QUERY_VBLANK");
    let vb = escape::QueryVblankOut::decode(&out).unwrap();
    assert_ne!(vb.flags & escape::DBGCTL_QUERY_VBLANK_FLAG_VALID, 0);
    assert_eq!(
        vb.vblank_seq,
        u64::from(k.reg(reg::SCANOUT0_VBLANK_SEQ_LO)),
        "the device's vblank count"
    );
    assert!(vb.vblank_seq > 0, "vblanks happened");
    assert_eq!(vb.vblank_period_ns, k.reg(reg::SCANOUT0_VBLANK_PERIOD_NS));

    let req = escape::DumpCreateAllocationInout {
        hdr: escape_header(
            escape::OP_DUMP_CREATEALLOCATION,
            escape::DumpCreateAllocationInout::SIZE,
        ),
        ..Default::default()
    };
    let (st, out) = k.escape(&req.to_bytes());
    assert_eq!(st, STATUS_SUCCESS, "DUMP_CREATEALLOCATION");
    let trace = escape::DumpCreateAllocationInout::decode(&out).unwrap();
    let entries = &trace.entries[..trace.entry_count as usize];
    assert_eq!(
        trace.entry_count, 9,
        "one entry per allocation created (4 by the runtime presents): {entries:?}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e.alloc_id == 7 && e.size_bytes == 64 << 10),
        "the 64 KiB buffer is traced: {entries:?}"
    );

    // A runtime present (a flip: a header-only stream) and a paging buffer: both still
    // carry a fence to completion.
    let next = k.query_fence().last_submitted_fence as u32 + 1;
    let flip = PresentCall {
        flags: PRESENT_FLIP,
        src: buffer,
        ..Default::default()
    };
    let (st, _, _) = k.present(context, &flip);
    assert_eq!(st, STATUS_SUCCESS, "Present");
    let (desc, _) = k.ring_entry(ring_tail(&k) - 1);
    assert_ne!(
        desc.flags & aero_protocol::ring::SUBMIT_FLAG_PRESENT,
        0,
        "a present submission"
    );
    let s = k.alloc(k.l("DXGKARG_SUBMITCOMMAND"));
    k.put(s, "DXGKARG_SUBMITCOMMAND.SubmissionFenceId", next + 1);
    k.put(s, "DXGKARG_SUBMITCOMMAND.Flags", 1); // Paging
    assert_eq!(k.ddi("SubmitCommand", &[adapter, s]), STATUS_SUCCESS);
    assert_eq!(k.emu.bus.gpu.completed_fence(), u64::from(next + 1));
    while k.service_interrupt() {}
    assert_eq!(
        k.nt.notifications.last(),
        Some(&Notify::DmaCompleted(next + 1))
    );

    // Timeout detection and recovery: the ring restarts and the next submission runs.
    assert_eq!(k.ddi("ResetFromTimeout", &[adapter]), STATUS_SUCCESS);
    assert_eq!(k.ddi("RestartFromTimeout", &[adapter]), STATUS_SUCCESS);
    let (r, s) = k.render_submit(context, &CmdStreamWriter::new().finish(), &[], next + 2);
    assert_eq!((r, s), (STATUS_SUCCESS, STATUS_SUCCESS));
    assert_eq!(
        k.emu.bus.gpu.completed_fence(),
        u64::from(next + 2),
        "work runs after a reset"
    );
    while k.service_interrupt() {}

    // ---- Teardown: everything the driver allocated goes back -----------------------------
    // VidMm unmaps before it frees: the GART entry goes.
    let b = k.paging_buffer(6, other, 16, 1);
    assert_eq!(k.ddi("BuildPagingBuffer", &[adapter, b]), STATUS_SUCCESS);
    assert_eq!(k.gart_entry(16), 0, "unmapped aperture page");
    let b = k.paging_buffer(5, other, mb_max * 256, 1);
    assert_ne!(
        k.ddi("BuildPagingBuffer", &[adapter, b]),
        STATUS_SUCCESS,
        "a range past the aperture is refused"
    );
    k.destroy_allocation(buffer);
    k.destroy_allocation(other);
    assert_eq!(k.ddi("DestroyContext", &[context]), STATUS_SUCCESS);
    assert_eq!(k.ddi("DestroyDevice", &[device]), STATUS_SUCCESS);
    eprintln!(
        "aerogpu.sys ran {} instructions on Aero's CPU",
        k.emu.instructions
    );

    // ---- Restart with the READ_GPA escape enabled: privileged callers read GPU-owned
    // memory (the ring), and nothing else -----------------------------------------------
    assert_eq!(k.ddi("StopDevice", &[adapter]), STATUS_SUCCESS);
    k.nt.set_registry(
        &format!("{SERVICE_KEY}\\Parameters"),
        "EnableReadGpaEscape",
        1,
    );
    k.nt.set_registry(
        &format!("{SERVICE_KEY}\\Parameters"),
        "EnableMapSharedHandleEscape",
        1,
    );
    k.start_device();
    let ring = k.reg(reg::RING_GPA_LO);
    let read_gpa = |k: &mut Kmd, gpa: u64, size: u32| {
        let req = escape::ReadGpaInout {
            hdr: escape_header(escape::OP_READ_GPA, escape::ReadGpaInout::SIZE),
            gpa,
            size_bytes: size,
            ..Default::default()
        };
        let (st, out) = k.escape(&req.to_bytes());
        (st, escape::ReadGpaInout::decode(&out).unwrap())
    };
    let (st, _) = read_gpa(&mut k, u64::from(ring), 64);
    assert_eq!(
        st, STATUS_ACCESS_DENIED,
        "enabled, but the caller lacks SeDebugPrivilege"
    );
    k.nt.privileged = true;
    let (st, r) = read_gpa(&mut k, u64::from(ring), 64);
    assert_eq!(st, STATUS_SUCCESS, "privileged READ_GPA of the ring");
    assert_eq!(r.bytes_copied, 64);
    assert_eq!(
        &r.data[..64],
        &k.emu.read(ring, 64).unwrap()[..],
        "the ring header, as in RAM"
    );
    let (st, _) = read_gpa(&mut k, u64::from(fence_page + 0x10_0000), 64);
    assert_eq!(
        st, STATUS_ACCESS_DENIED,
        "memory the GPU does not own stays private"
    );
    // MAP_SHARED_HANDLE: two handles to one object get one token, another object another.
    k.nt.handles.extend([
        (0x44, 0x00AB_C000),
        (0x48, 0x00AB_C000),
        (0x4C, 0x00DE_F000),
    ]);
    k.nt.privileged = false;
    assert_eq!(
        k.map_shared_handle(0x44).0,
        STATUS_ACCESS_DENIED,
        "unprivileged"
    );
    k.nt.privileged = true;
    let (st, t1) = k.map_shared_handle(0x44);
    assert_eq!(st, STATUS_SUCCESS, "MAP_SHARED_HANDLE");
    assert_ne!(t1, 0);
    assert_eq!(
        k.map_shared_handle(0x48),
        (STATUS_SUCCESS, t1),
        "the same object, the same token"
    );
    let (st, t2) = k.map_shared_handle(0x4C);
    assert_eq!(st, STATUS_SUCCESS);
    assert_ne!(t2, t1, "another object, another token");
    assert_ne!(
        k.map_shared_handle(0x99).0,
        STATUS_SUCCESS,
        "not a handle of the caller"
    );
    assert_eq!(k.nt.object_refs, 0, "every object reference was dropped");
    // READ_GPA of the scanned-out primary reads through the GART, as the device does.
    let blob = k.standard_primary(1024, 768);
    let (primary, _) = k.create_allocation(&blob, 0);
    let pages = k.scattered_pages(768);
    let fb = k.map_aperture(primary, &pages);
    k.set_source_address(primary);
    assert_eq!(k.scanout_fb(), fb);
    k.emu.write(pages[0] + 4064, &[0x5A; 32]).unwrap();
    k.emu.write(pages[1], &[0xA5; 32]).unwrap();
    let (st, r) = read_gpa(&mut k, fb + 4064, 64);
    assert_eq!(st, STATUS_SUCCESS, "READ_GPA of the primary");
    assert_eq!(r.status, 0);
    assert_eq!(&r.data[..32], &[0x5A; 32], "the end of aperture page 0");
    assert_eq!(
        &r.data[32..64],
        &[0xA5; 32],
        "the start of page 1, elsewhere in RAM"
    );
    k.destroy_allocation(primary);
    let device = k.create_device();
    let context = k.create_context(device);
    let (r, s) = k.render_submit(context, &CmdStreamWriter::new().finish(), &[], next + 3);
    assert_eq!(
        (r, s),
        (STATUS_SUCCESS, STATUS_SUCCESS),
        "submissions work after a restart"
    );
    let (desc, _) = k.ring_entry(ring_tail(&k) - 1);
    assert!(
        desc.context_id != 0 && desc.context_id != first_context_id,
        "a new context gets a new id"
    );
    assert_eq!(k.emu.bus.gpu.completed_fence(), u64::from(next + 3));
    while k.service_interrupt() {}
    assert_eq!(k.ddi("DestroyContext", &[context]), STATUS_SUCCESS);
    assert_eq!(k.ddi("DestroyDevice", &[device]), STATUS_SUCCESS);
    k.stop_and_check_leaks();
}

/// The harness's call checks can fail: a callee that changes a callee-saved register
/// (EBX on x86; XMM6 on x64) without restoring it is caught, one that saves and restores
/// it passes.
#[test]
fn harness_catches_clobbered_callee_saved_registers() {
    struct NoServices;
    impl Services for NoServices {
        fn service(&mut self, _: &mut Emu, name: &str) -> Result<Return, String> {
            Err(format!("unexpected service {name}"))
        }
    }
    let run = |bits: u32, code: &[u8]| {
        let mut emu = Emu::new(x86_host::host_gpu(), bits);
        emu.write(x86_host::IMAGE_MIN, code).unwrap();
        emu.call(&mut NoServices, x86_host::IMAGE_MIN, &[], Conv::Stdcall)
    };
    // mov ebx, 1; ret
    let e = run(32, &[0xBB, 1, 0, 0, 0, 0xC3]).unwrap_err();
    assert!(e.contains("gpr3"), "{e}");
    // push ebx; mov ebx, 1; pop ebx; ret
    run(32, &[0x53, 0xBB, 1, 0, 0, 0, 0x5B, 0xC3]).unwrap();
    // movaps xmm6, xmm0; ret
    let e = run(64, &[0x0F, 0x28, 0xF0, 0xC3]).unwrap_err();
    assert!(e.contains("xmm6"), "{e}");
    // push rbx; mov ebx, 1; pop rbx; ret
    run(64, &[0x53, 0xBB, 1, 0, 0, 0, 0x5B, 0xC3]).unwrap();
}
