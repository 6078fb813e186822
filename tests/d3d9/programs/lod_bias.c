/* D3DSAMP_MIPMAPLODBIAS: mipmaps.c's eight cells with a level-of-detail bias of -1 (even
 * cells) and +1 (odd cells) on every draw. Writes lod_bias.ppm. */
#define MIPMAPS_LOD_BIAS 1
#include "mipmaps.c"
