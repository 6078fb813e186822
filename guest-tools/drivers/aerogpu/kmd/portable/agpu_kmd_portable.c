/* Unity build of the portable KMD core (one object for the driver and the host tests). */
#include "agpu_ring.c"
#include "agpu_submit.c"
#include "agpu_config.c"
#include "agpu_modes.c"
#include "agpu_share.c"
#include "agpu_escape.c"
#include "agpu_device.c"
#include "agpu_present.c"
