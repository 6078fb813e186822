/* D3DFMT_A8 and D3DFMT_A8L8 textures as pixel shaders read them; see formats.c. Writes
 * formats_alpha.ppm. */
#define FORMATS_ALPHA 1
#include "formats.c"
