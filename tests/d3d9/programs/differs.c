/* compare.sh's own check: writes an image whose pixels depend on which Direct3D 9 runs
 * the program (the adapter description), so comparing the two runs must fail. */
#include "common.h"
#include <string.h>

int main(void) {
    IDirect3D9 *d3d = Direct3DCreate9(D3D_SDK_VERSION);
    D3DADAPTER_IDENTIFIER9 id;
    FILE *f = fopen("differs.ppm", "wb");
    unsigned char px[3] = {0, 0, 0};
    if (!d3d || !f) return 1;
    CHECK(IDirect3D9_GetAdapterIdentifier(d3d, 0, 0, &id));
    if (strstr(id.Description, "AeroGPU")) px[0] = 200;
    fprintf(f, "P6\n1 1\n255\n");
    fwrite(px, 1, 3, f);
    fclose(f);
    IDirect3D9_Release(d3d);
    return 0;
}
