/* ps_1_x bump mapping: texbem, texbeml and ps_1_4's bem with stage 1's bump environment
 * matrix, luminance scale and offset (two settings, one per row); see
 * shaders_1_x_texaddr.c. Writes bump_env.ppm. */
#define BUMP_ENV 1
#include "shaders_1_x_texaddr.c"
