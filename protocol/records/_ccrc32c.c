/*
 * CRC-32C (Castagnoli), the checksum of v2 record batches, for the C down-conversion's jobs.
 *
 * The jobs check a batch's stored CRC on whichever thread runs them, so the event loop's thread no
 * longer spends its time on it. On x86-64 with SSE4.2 the CRC32 instruction does the work on three
 * independent stretches of the buffer at once (the instruction takes three cycles, one can start
 * every cycle), and the three states are joined: a state moved past n further zero bytes is the
 * state times x^(8n) modulo the polynomial, a 32-step product done in software once per stretch,
 * with x^(8n) for the two stretch lengths computed at start-up. Elsewhere a table does it a byte
 * at a time. crc32c(data[, value]) gives Python the same value as the crc32c package, for tests.
 */
#include "_cdownconvert.h"
#include <string.h>

#define CASTAGNOLI 0x82F63B78u  /* bit-reflected, as the CRC is computed */
#define LONG_STRETCH 8192
#define SHORT_STRETCH 256

static uint32_t table[256];
static uint32_t x_long, x_short;  /* x^(8 * stretch) mod P, for the two stretch lengths */

/* a * b mod P, both bit-reflected (bit 31 is the coefficient of x^0). */
static uint32_t mul_mod(uint32_t a, uint32_t b) {
    uint32_t product = 0;
    for (uint32_t bit = 0x80000000u; bit && a; bit >>= 1) {
        if (a & bit) {
            product ^= b;
            a ^= bit;
        }
        b = (b & 1) ? (b >> 1) ^ CASTAGNOLI : b >> 1;  /* b times x */
    }
    return product;
}

/* x^(8 * bytes) mod P. */
static uint32_t x_to_bytes(size_t bytes) {
    uint32_t p = 0x80000000u;  /* x^0 */
    for (size_t i = 0; i < 8 * bytes; i++)
        p = (p & 1) ? (p >> 1) ^ CASTAGNOLI : p >> 1;
    return p;
}

static uint32_t by_table(uint32_t state, const uint8_t *p, size_t n) {
    while (n--)
        state = table[(state ^ *p++) & 0xFF] ^ (state >> 8);
    return state;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define HAVE_SSE42 1
static int use_sse42;

/* Three stretches of `len` bytes each (a multiple of 8) from `state`, joined. */
__attribute__((target("sse4.2"))) static uint32_t three_stretches(uint32_t state, const uint8_t *p, size_t len,
                                                                    uint32_t x_len) {
    uint64_t a = state, b = 0, c = 0, v;
    for (size_t i = 0; i < len; i += 8) {
        memcpy(&v, p + i, 8), a = _mm_crc32_u64(a, v);
        memcpy(&v, p + len + i, 8), b = _mm_crc32_u64(b, v);
        memcpy(&v, p + 2 * len + i, 8), c = _mm_crc32_u64(c, v);
    }
    return mul_mod(mul_mod((uint32_t)a, x_len) ^ (uint32_t)b, x_len) ^ (uint32_t)c;
}

__attribute__((target("sse4.2"))) static uint32_t by_instruction(uint32_t state, const uint8_t *p, size_t n) {
    for (; n >= 3 * LONG_STRETCH; p += 3 * LONG_STRETCH, n -= 3 * LONG_STRETCH)
        state = three_stretches(state, p, LONG_STRETCH, x_long);
    for (; n >= 3 * SHORT_STRETCH; p += 3 * SHORT_STRETCH, n -= 3 * SHORT_STRETCH)
        state = three_stretches(state, p, SHORT_STRETCH, x_short);
    uint64_t s = state, v;
    for (; n >= 8; p += 8, n -= 8)
        memcpy(&v, p, 8), s = _mm_crc32_u64(s, v);
    state = (uint32_t)s;
    while (n--)
        state = _mm_crc32_u8(state, *p++);
    return state;
}
#endif

uint32_t crc32c_update(uint32_t crc, const uint8_t *p, size_t n) {
#ifdef HAVE_SSE42
    if (use_sse42)
        return ~by_instruction(~crc, p, n);
#endif
    return ~by_table(~crc, p, n);
}

void crc32c_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? CASTAGNOLI ^ (c >> 1) : c >> 1;
        table[n] = c;
    }
    x_long = x_to_bytes(LONG_STRETCH), x_short = x_to_bytes(SHORT_STRETCH);
#ifdef HAVE_SSE42
    __builtin_cpu_init();
    use_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

/* Tests: crc32c(data, value=0, hardware=True); hardware=False takes the table. */
PyObject *ccrc32c_py(PyObject *self, PyObject *args) {
    Py_buffer buf;
    unsigned int start = 0;
    int hardware = 1;
    if (!PyArg_ParseTuple(args, "y*|Ip", &buf, &start, &hardware))
        return NULL;
    uint32_t crc;
#ifdef HAVE_SSE42
    int was = use_sse42;
    use_sse42 = was && hardware;
    crc = crc32c_update(start, buf.buf, (size_t)buf.len);
    use_sse42 = was;
#else
    crc = crc32c_update(start, buf.buf, (size_t)buf.len);
#endif
    PyBuffer_Release(&buf);
    return PyLong_FromUnsignedLong(crc);
}
