/*
 * CRC-32 (IEEE, as zlib.crc32), the checksum of legacy messages, for the C down-conversion.
 *
 * It is most of the cost of writing a message: on x86-64 CPUs with PCLMULQDQ it
 * folds 64 bytes per step with carry-less multiplies (Gopal et al., "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ", Intel 2009: constants
 * x^k mod P for the bit-reflected polynomial, then a Barrett reduction), about
 * 5x the table method. Moving a 128-bit lane d bits on multiplies its two halves
 * by x^(d-32) and x^(d+32) mod P (bit-reflected, 33 bits; test_downconvert_c.py
 * derives each pair). Wider registers fold more lanes per step, chosen at run
 * time by what the CPU has (fold_level):
 *   - AVX2 and VPCLMULQDQ (Zen 3, Alder Lake: no AVX-512): buffers of 128 bytes
 *     and more fold 128 bytes per step in four 256-bit registers, each of their
 *     eight lanes moved 1024 bits on (x^992, x^1056), about 2x on long buffers;
 *   - AVX-512 and VPCLMULQDQ: buffers of 256 bytes and more fold 256 bytes per
 *     step in four 512-bit registers (2048 bits on: x^2016, x^2080);
 * both then fold their registers down to four lanes and go on as the 128-bit
 * path does. The last bytes of each buffer (under 16), and other CPUs, go
 * slice-by-8 from tables built at import.
 */
#include "_cdownconvert.h"

static uint32_t crc_tables[8][256];

static void crc_tables_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_tables[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int t = 1; t < 8; t++)
            crc_tables[t][n] = (crc_tables[t - 1][n] >> 8) ^ crc_tables[0][crc_tables[t - 1][n] & 0xFF];
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_FOLD 1
/* 0: tables, 1: PCLMULQDQ, 2: VPCLMULQDQ on AVX2 as well, 3: VPCLMULQDQ on AVX-512 */
static int fold_level;

/* Whether the CPU (and the OS, which must save the wide registers: __builtin_cpu_supports checks
 * that for AVX2 and AVX-512) can take CRC path `level`. */
static int has_fold_level(int level) {
    if (level == 0)
        return 1;
    if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.1"))
        return 0;
    if (level == 1)
        return 1;
    if (!__builtin_cpu_supports("vpclmulqdq"))
        return 0;
    return level == 2 ? __builtin_cpu_supports("avx2") : level == 3 && __builtin_cpu_supports("avx512f");
}

/* `level`, or the next one down the CPU has. */
static int usable_fold_level(int level) {
    while (level > 0 && !has_fold_level(level))
        level--;
    return level;
}

/* Fold 16-byte lane `x` forward by the distance `k` encodes, then add `next`. */
__attribute__((target("pclmul,sse4.1"))) static inline __m128i fold(__m128i x, __m128i k, __m128i next) {
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00), hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* The raw CRC state of four lanes holding the last 64 bytes folded so far, then `n` more bytes (a
 * multiple of 16). Inlined into both callers: called, it ran at half speed. */
__attribute__((target("pclmul,sse4.1"), always_inline)) static inline uint32_t fold_rest(const __m128i *in,
                                                                                         const uint8_t *p, size_t n) {
    __m128i lane[4] = {in[0], in[1], in[2], in[3]};
    const __m128i by64 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);  /* x^(512-32), x^(512+32) mod P */
    const __m128i by16 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);  /* x^(128-32), x^(128+32) mod P */
    const __m128i by8 = _mm_set_epi64x(0, 0x163cd6124);             /* x^64 mod P */
    const __m128i barrett = _mm_set_epi64x(0x1f7011641, 0x1db710641);  /* floor(x^64 / P), P */
    const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
    for (; n >= 64; p += 64, n -= 64)
        for (int i = 0; i < 4; i++)
            lane[i] = fold(lane[i], by64, _mm_loadu_si128((const __m128i *)(p + 16 * i)));
    __m128i x = lane[0];
    for (int i = 1; i < 4; i++)
        x = fold(x, by16, lane[i]);
    for (; n >= 16; p += 16, n -= 16)
        x = fold(x, by16, _mm_loadu_si128((const __m128i *)p));
    /* 128 -> 96 -> 64 bits, then Barrett down to 32 */
    x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, by16, 0x10));
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), by8, 0x00), _mm_srli_si128(x, 4));
    __m128i t = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), barrett, 0x10), low32);
    x = _mm_xor_si128(x, _mm_clmulepi64_si128(t, barrett, 0x00));
    return (uint32_t)_mm_extract_epi32(x, 1);
}

/* The raw (pre-inverted) CRC state after `n` bytes, n >= 64 and a multiple of 16. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_fold(uint32_t state, const uint8_t *p, size_t n) {
    __m128i lane[4];
    for (int i = 0; i < 4; i++)
        lane[i] = _mm_loadu_si128((const __m128i *)(p + 16 * i));
    lane[0] = _mm_xor_si128(lane[0], _mm_cvtsi32_si128((int)state));
    return fold_rest(lane, p + 64, n - 64);
}

#define YMM_TARGET __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.1")))

/* The two 128-bit lanes of `x` folded forward by the distance `k` encodes, plus `next`. */
YMM_TARGET static inline __m256i fold256(__m256i x, __m256i k, __m256i next) {
    __m256i lo = _mm256_clmulepi64_epi128(x, k, 0x00), hi = _mm256_clmulepi64_epi128(x, k, 0x11);
    return _mm256_xor_si256(_mm256_xor_si256(lo, hi), next);
}

/* As crc32_fold, for n >= 128: 128 bytes per step in four 256-bit registers (eight lanes). Loads are
 * VLDDQU: GCC's generic tuning splits a plain unaligned 256-bit load in two and here bounced the halves
 * through the stack, which made buffers under 256 bytes slower than the 128-bit path. */
YMM_TARGET static uint32_t crc32_fold256(uint32_t state, const uint8_t *p, size_t n) {
    const __m256i by128 = _mm256_broadcastsi128_si256(_mm_set_epi64x(0x14a7fe880, 0x1e88ef372));  /* 1024 -/+ 32 */
    const __m256i by64 = _mm256_broadcastsi128_si256(_mm_set_epi64x(0x1c6e41596, 0x154442bd4));
    __m256i y[4];
    for (int i = 0; i < 4; i++)
        y[i] = _mm256_lddqu_si256((const __m256i *)(p + 32 * i));
    y[0] = _mm256_xor_si256(y[0], _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)state)));
    for (p += 128, n -= 128; n >= 128; p += 128, n -= 128)
        for (int i = 0; i < 4; i++)
            y[i] = fold256(y[i], by128, _mm256_lddqu_si256((const __m256i *)(p + 32 * i)));
    /* the first 64 bytes onto the last 64: four lanes, as fold_rest takes them */
    __m256i a = fold256(y[0], by64, y[2]), b = fold256(y[1], by64, y[3]);
    __m128i lane[4] = {_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1), _mm256_castsi256_si128(b),
                       _mm256_extracti128_si256(b, 1)};
    return fold_rest(lane, p, n);
}

#define WIDE_TARGET __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.1")))

/* The four 128-bit lanes of `x` folded forward by the distance `k` encodes, plus `next`. */
WIDE_TARGET static inline __m512i fold512(__m512i x, __m512i k, __m512i next) {
    __m512i lo = _mm512_clmulepi64_epi128(x, k, 0x00), hi = _mm512_clmulepi64_epi128(x, k, 0x11);
    return _mm512_ternarylogic_epi64(lo, hi, next, 0x96);  /* lo ^ hi ^ next */
}

/* As crc32_fold, for n >= 256: 256 bytes per step in four 512-bit registers. */
WIDE_TARGET static uint32_t crc32_fold512(uint32_t state, const uint8_t *p, size_t n) {
    const __m512i by256 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x1322d1430, 0x11542778a));  /* 2048 -/+ 32 */
    const __m512i by64 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x1c6e41596, 0x154442bd4));
    __m512i z[4];
    for (int i = 0; i < 4; i++)
        z[i] = _mm512_loadu_si512((const void *)(p + 64 * i));
    z[0] = _mm512_xor_si512(z[0], _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)state)));
    for (p += 256, n -= 256; n >= 256; p += 256, n -= 256)
        for (int i = 0; i < 4; i++)
            z[i] = fold512(z[i], by256, _mm512_loadu_si512((const void *)(p + 64 * i)));
    for (int i = 1; i < 4; i++)
        z[i] = fold512(z[i - 1], by64, z[i]);
    __m128i lane[4] = {_mm512_extracti32x4_epi32(z[3], 0), _mm512_extracti32x4_epi32(z[3], 1),
                       _mm512_extracti32x4_epi32(z[3], 2), _mm512_extracti32x4_epi32(z[3], 3)};
    return fold_rest(lane, p, n);
}
#endif

uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
#ifdef HAVE_FOLD
    if (fold_level && n >= 64) {
        size_t whole = n & ~(size_t)15;
        if (fold_level == 3 && whole >= 256)
            crc = crc32_fold512(crc, p, whole);
        else if (fold_level == 2 && whole >= 128)
            crc = crc32_fold256(crc, p, whole);
        else
            crc = crc32_fold(crc, p, whole);
        p += whole, n -= whole;
    }
#endif
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        crc = crc_tables[7][lo & 0xFF] ^ crc_tables[6][(lo >> 8) & 0xFF] ^ crc_tables[5][(lo >> 16) & 0xFF] ^
              crc_tables[4][lo >> 24] ^ crc_tables[3][p[4]] ^ crc_tables[2][p[5]] ^ crc_tables[1][p[6]] ^
              crc_tables[0][p[7]];
    }
    while (n--)
        crc = crc_tables[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* crc32(data[, value]) for Python: zlib.crc32's answer from whichever path is in use (tests). */
PyObject *ccrc32_py(PyObject *self, PyObject *args) {
    Py_buffer buf;
    unsigned int start = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &buf, &start))
        return NULL;
    uint32_t crc = crc32_update(start, buf.buf, (size_t)buf.len);
    PyBuffer_Release(&buf);
    return PyLong_FromUnsignedLong(crc);
}

/* Tests pick the CRC path (0 tables, 1 PCLMULQDQ, 2 AVX2 + VPCLMULQDQ, 3 AVX-512 + VPCLMULQDQ); a path the
 * CPU lacks gives the next one down it has. Returns the level that was in use. */
PyObject *ccrc32_set_fold(PyObject *self, PyObject *arg) {
    long level = PyLong_AsLong(arg);
    if (level == -1 && PyErr_Occurred())
        return NULL;
#ifdef HAVE_FOLD
    int was = fold_level;
    fold_level = usable_fold_level(level < 0 ? 0 : level > 3 ? 3 : (int)level);
    return PyLong_FromLong(was);
#else
    return PyLong_FromLong(0);
#endif
}

void crc32_init(void) {
    crc_tables_init();
#ifdef HAVE_FOLD
    __builtin_cpu_init();
    fold_level = usable_fold_level(3);
#endif
}
