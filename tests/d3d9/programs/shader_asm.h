/* A tiny D3D9 shader token assembler for the tests/d3d9 programs: C macros that build the
 * DWORD tokens of D3D9's shader bytecode (d3d9types.h's D3DSHADER_* layout), so programs
 * spell instructions as `MOV, DST(R, 0, XYZW), SRC(C, 1, XYZW)` instead of raw hex.
 *
 * Instruction token: opcode in bits 0-15, controls (comparison) in 16-23, the length of
 * the instruction's parameter tokens in 24-27 (shader model 2 and later; zero in 1.x),
 * predicated bit 28, co-issue bit 30. Register tokens: bit 31 set, register type split over
 * bits 28-30 and 11-12, number in 0-10; destinations carry the write mask in 16-19,
 * result modifiers (_sat, _pp, _centroid) in 20-23 and the shift in 24-27; sources carry
 * the swizzle in 16-23 and the source modifier in 24-27. */
#ifndef D3D9_PROGRAMS_SHADER_ASM_H
#define D3D9_PROGRAMS_SHADER_ASM_H

/* Versions. */
#define VS(maj, min) (0xFFFE0000u | ((maj) << 8) | (min))
#define PS(maj, min) (0xFFFF0000u | ((maj) << 8) | (min))
#define END 0x0000FFFFu

/* Instructions: INS(op, n) with n parameter tokens (SM2+); SM1 instructions use INS1(op). */
#define INS(op, n) ((unsigned)(op) | ((unsigned)(n) << 24))
#define INS1(op) ((unsigned)(op))
#define COISSUE 0x40000000u
#define PREDICATED 0x10000000u
/* Comparisons of ifc/breakc/setp (controls field). */
#define CMP_GT (1u << 16)
#define CMP_EQ (2u << 16)
#define CMP_GE (3u << 16)
#define CMP_LT (4u << 16)
#define CMP_NE (5u << 16)
#define CMP_LE (6u << 16)
/* texld's controls: texldp (project) and texldb (bias). */
#define TEXLD_PROJECT (1u << 16)
#define TEXLD_BIAS (2u << 16)

enum shader_opcode {
    NOP = 0x00, MOV = 0x01, ADD = 0x02, SUB = 0x03, MAD = 0x04, MUL = 0x05, RCP = 0x06,
    RSQ = 0x07, DP3 = 0x08, DP4 = 0x09, MIN = 0x0A, MAX = 0x0B, SLT = 0x0C, SGE = 0x0D,
    EXP = 0x0E, LOG = 0x0F, LIT = 0x10, DST_OP = 0x11, LRP = 0x12, FRC = 0x13, M4X4 = 0x14,
    M4X3 = 0x15, M3X4 = 0x16, M3X3 = 0x17, M3X2 = 0x18, CRS = 0x21, SGN = 0x22, EXPP = 0x4E,
    LOGP = 0x4F, CALL = 0x19, CALLNZ = 0x1A, LOOP = 0x1B, RET = 0x1C, ENDLOOP = 0x1D, LABEL = 0x1E,
    DCL = 0x1F, POW = 0x20, ABS_OP = 0x23, NRM = 0x24, SINCOS = 0x25, REP = 0x26,
    ENDREP = 0x27, IF = 0x28, IFC = 0x29, ELSE = 0x2A, ENDIF = 0x2B, BREAK = 0x2C,
    BREAKC = 0x2D, MOVA = 0x2E, DEFB = 0x2F, DEFI = 0x30, TEXCOORD = 0x40, TEXKILL = 0x41,
    TEX = 0x42, TEXBEM = 0x43, TEXBEML = 0x44, TEXREG2AR = 0x45, TEXREG2GB = 0x46,
    TEXM3X2PAD = 0x47, TEXM3X2TEX = 0x48, TEXM3X3PAD = 0x49, TEXM3X3TEX = 0x4A, CND = 0x50,
    TEXREG2RGB = 0x52, TEXDP3TEX = 0x53, TEXDP3 = 0x55, TEXM3X3 = 0x56, CMP = 0x58, BEM = 0x59,
    DP2ADD = 0x5A, DSX = 0x5B, DSY = 0x5C, TEXLDD = 0x5D,
    SETP = 0x5E, TEXLDL = 0x5F, BREAKP = 0x60, PHASE = 0xFFFD, DEF = 0x51,
};

/* Register types. */
enum shader_regtype {
    R = 0, V = 1, C = 2, A = 3, T = 3, RASTOUT = 4, ATTROUT = 5, O = 6, TEXCRDOUT = 6,
    I = 7, COLOROUT = 8, DEPTHOUT = 9, S = 10, B = 14, AL = 15, MISC = 17, LABEL_REG = 18,
    P = 19,
};
#define REGTYPE(t) (((((unsigned)(t)) & 7u) << 28) | ((((unsigned)(t)) & 0x18u) << 8))

/* Write masks and swizzles. */
#define WX 0x1u
#define WY 0x2u
#define WZ 0x4u
#define WW 0x8u
#define WXY 0x3u
#define WXYZ 0x7u
#define WZW 0xCu
#define WALL 0xFu
#define SW(x, y, z, w) ((unsigned)(x) | ((unsigned)(y) << 2) | ((unsigned)(z) << 4) | ((unsigned)(w) << 6))
#define XYZW SW(0, 1, 2, 3)
#define XXXX SW(0, 0, 0, 0)
#define YYYY SW(1, 1, 1, 1)
#define ZZZZ SW(2, 2, 2, 2)
#define WWWW SW(3, 3, 3, 3)

/* Destination: DST(type, number, mask) | modifiers. */
#define DST(t, n, mask) (0x80000000u | REGTYPE(t) | ((unsigned)(mask) << 16) | (unsigned)(n))
#define SAT 0x00100000u
#define SHIFT_X2 (1u << 24)
#define SHIFT_X4 (2u << 24)
#define SHIFT_D2 (0xFu << 24)

/* Source: SRC(type, number, swizzle) | modifier. */
#define SRC(t, n, swz) (0x80000000u | REGTYPE(t) | ((unsigned)(swz) << 16) | (unsigned)(n))
#define NEG (1u << 24)
#define BIAS (2u << 24)
#define BX2 (4u << 24)
#define COMP (6u << 24)
#define X2 (7u << 24)
#define DZ (9u << 24)
#define DW (10u << 24)
#define ABS (11u << 24)
#define REL 0x00002000u /* relative addressing: SM2+ follow with the address register's source token; vs_1_1 uses a0.x without one */

/* dcl: usage token then the declared register. Usages (D3DDECLUSAGE_*) in bits 0-4, usage
 * index in 16-19; sampler declarations carry the texture type in bits 27-30. */
#define DCL_USAGE(usage, index) (0x80000000u | (unsigned)(usage) | ((unsigned)(index) << 16))
#define DCL_SAMPLER_2D 0x90000000u
#define DCL_SAMPLER_CUBE 0x98000000u
#define DCL_SAMPLER_VOLUME 0xA0000000u
#define USAGE_POSITION 0
#define USAGE_NORMAL 3
#define USAGE_TEXCOORD 5
#define USAGE_COLOR 10

/* Float bits of a constant for def. */
#define F(x) (((union { float f; unsigned u; }){(float)(x)}).u)

#endif
