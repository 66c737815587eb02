#ifndef CAIRN_CLMDB_SHIM_H
#define CAIRN_CLMDB_SHIM_H

#include <lmdb.h>
#include <stdint.h>
#include <stddef.h>

/*
 * CRC-32C (Castagnoli), the checksum of Cairn's log records and stored records.
 * It lives beside the LMDB header because it is the only other C that the engine
 * needs: the SSE4.2 instruction makes checksumming cheap enough for the read path,
 * and Swift has no portable way to reach it. The table path is the fallback for
 * processors without SSE4.2 and for other architectures.
 *
 * Frozen: the polynomial (0x82F63B78, reflected), initial value ~0 and final xor ~0
 * are part of the on-disk format.
 */

static inline uint32_t cairn_crc32c_table_entry(uint32_t index) {
    uint32_t crc = index;
    for (int bit = 0; bit < 8; bit++) {
        crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : (crc >> 1);
    }
    return crc;
}

static inline uint32_t cairn_crc32c_software(uint32_t crc, const uint8_t *bytes, size_t count) {
    static uint32_t table[256];
    static int ready = 0;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (uint32_t i = 0; i < 256; i++) table[i] = cairn_crc32c_table_entry(i);
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    for (size_t i = 0; i < count; i++) {
        crc = table[(crc ^ bytes[i]) & 0xFFu] ^ (crc >> 8);
    }
    return crc;
}

#if defined(__x86_64__)
/*
 * Three lanes at once, for buffers of 128 bytes and more (a log record, a large value):
 * the crc32 instruction takes three cycles but can start every cycle, so one chain of them
 * runs at a third of the speed the processor allows. The buffer is cut into rounds of three
 * equal lanes of `words` eight-byte words (at most 64); each lane is summed on its own chain
 * (the second and third from zero) and the three are joined: moving a CRC past n zero bytes
 * multiplies it by x^(8n) mod P, a carry-less multiplication by a constant, reduced by crc32.
 */
typedef long long cairn_v2di __attribute__((vector_size(16)));

/* Entry w - 1: x^(64w - 33) mod P, bit-reflected. The carry-less product of a CRC and it,
 * reduced by crc32 over its 64 bits (a multiplication by x^33), is the CRC moved past w
 * words of zeros. */
static const uint32_t cairn_crc32c_lane_factors[64] = {
    0x00000001, 0x493C7D27, 0xF20C0DFE, 0xBA4FC28E, 0x3DA6D0CB, 0xDDC0152B,
    0x1C291D04, 0x9E4ADDF8, 0x740EEF02, 0x39D3B296, 0x083A6EEC, 0x0715CE53,
    0xC49F4F67, 0x47DB8317, 0x2AD91C30, 0x0D3B6092, 0x6992CEA2, 0xC96CFDC0,
    0x7E908048, 0x878A92A7, 0x1B3D8F29, 0xDAECE73E, 0xF1D0F55E, 0xAB7AFF2A,
    0xA87AB8A8, 0x2162D385, 0x8462D800, 0x83348832, 0x71D111A8, 0x299847D5,
    0xFFD852C6, 0xB9E02B86, 0xDCB17AA4, 0x18B33A4E, 0xF37C5AEE, 0xB6DD949B,
    0x6051D5A2, 0x78D9CCB7, 0x18B0D4FF, 0xBAC2FD7B, 0x21F3D99C, 0xA60CE07B,
    0x8F158014, 0xCE7F39F4, 0xA00457F7, 0x61D82E56, 0x8D6D2C43, 0xD270F1A2,
    0x00AC29CF, 0xC619809D, 0xE9ADF796, 0x2B3CAC5D, 0x96638B34, 0x65863B64,
    0xE0E9F351, 0x1B03397F, 0x9AF01F2D, 0xEBB883BD, 0x2CFF42CF, 0xB3E32C28,
    0x88F25A3A, 0x064F7F26, 0x4E36F0B0, 0xDD7E3B0C,
};

__attribute__((target("sse4.2,pclmul")))
static inline uint32_t cairn_crc32c_shift(uint32_t crc, uint32_t factor) {
    cairn_v2di product = __builtin_ia32_pclmulqdq128((cairn_v2di){crc, 0}, (cairn_v2di){factor, 0}, 0x00);
    return (uint32_t)__builtin_ia32_crc32di(0, (unsigned long long)product[0]);
}

/* One chain of crc32 instructions over `count` bytes from the raw CRC state `crc`. */
__attribute__((target("sse4.2")))
static inline uint32_t cairn_crc32c_chain(uint32_t crc, const uint8_t *bytes, size_t count) {
    uint64_t wide = crc;
    while (count >= 8) {
        uint64_t word;
        __builtin_memcpy(&word, bytes, 8);
        wide = __builtin_ia32_crc32di(wide, word);
        bytes += 8;
        count -= 8;
    }
    /* The tail in at most three steps (keys and record headers rarely end on a word). */
    uint32_t narrow = (uint32_t)wide;
    if (count >= 4) {
        uint32_t word;
        __builtin_memcpy(&word, bytes, 4);
        narrow = __builtin_ia32_crc32si(narrow, word);
        bytes += 4;
        count -= 4;
    }
    if (count >= 2) {
        uint16_t half;
        __builtin_memcpy(&half, bytes, 2);
        narrow = __builtin_ia32_crc32hi(narrow, half);
        bytes += 2;
        count -= 2;
    }
    if (count > 0) narrow = __builtin_ia32_crc32qi(narrow, *bytes);
    return narrow;
}

/* The raw CRC state `crc` advanced over `count` bytes: whole rounds of three lanes, then one
 * chain over the fewer than 24 bytes left. Out of line, so that the common short buffer's
 * path (`cairn_crc32c_hardware`) stays small enough to inline. */
__attribute__((target("sse4.2,pclmul"), noinline))
static uint32_t cairn_crc32c_lanes(uint32_t crc, const uint8_t *bytes, size_t count) {
    uint64_t crc0 = crc;
    while (count >= 24) {
        size_t words = count / 24;
        if (words > 64) words = 64;
        size_t lane = words * 8;
        uint64_t crc1 = 0, crc2 = 0;
        const uint8_t *end = bytes + lane;
        do {
            uint64_t first, second, third;
            __builtin_memcpy(&first, bytes, 8);
            __builtin_memcpy(&second, bytes + lane, 8);
            __builtin_memcpy(&third, bytes + 2 * lane, 8);
            crc0 = __builtin_ia32_crc32di(crc0, first);
            crc1 = __builtin_ia32_crc32di(crc1, second);
            crc2 = __builtin_ia32_crc32di(crc2, third);
            bytes += 8;
        } while (bytes < end);
        uint32_t factor = cairn_crc32c_lane_factors[words - 1];
        crc0 = cairn_crc32c_shift((uint32_t)crc0, factor) ^ (uint32_t)crc1;
        crc0 = cairn_crc32c_shift((uint32_t)crc0, factor) ^ (uint32_t)crc2;
        bytes += 2 * lane;
        count -= 3 * lane;
    }
    return cairn_crc32c_chain((uint32_t)crc0, bytes, count);
}

/* Below this many bytes one chain is as fast: the joins cost what the lanes save. */
#define CAIRN_CRC32C_LANES_FROM 128

__attribute__((target("sse4.2")))
static inline uint32_t cairn_crc32c_hardware(uint32_t crc, const uint8_t *bytes, size_t count) {
    if (__builtin_expect(count >= CAIRN_CRC32C_LANES_FROM, 0) && __builtin_cpu_supports("pclmul")) {
        return cairn_crc32c_lanes(crc, bytes, count);
    }
    return cairn_crc32c_chain(crc, bytes, count);
}
#endif

/// Extends `crc` (a finished CRC-32C, 0 for none yet) with `count` bytes.
static inline uint32_t cairn_crc32c_extend(uint32_t crc, const void *bytes, size_t count) {
    uint32_t state = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) {
        return ~cairn_crc32c_hardware(state, (const uint8_t *)bytes, count);
    }
#endif
    return ~cairn_crc32c_software(state, (const uint8_t *)bytes, count);
}

/// The CRC-32C of `count` bytes followed by `secondCount` more (a stored record's key, then
/// its bytes after the checksum): one call where two `cairn_crc32c_extend`s were, once per
/// record read.
#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static inline uint32_t cairn_crc32c_hardware_pair(const void *bytes, size_t count, const void *second, size_t secondCount) {
    /* One chain each, without the test for lanes: stored records are mostly short, and every
     * read checks one. */
    uint32_t state = cairn_crc32c_chain(~0u, (const uint8_t *)bytes, count);
    return ~cairn_crc32c_chain(state, (const uint8_t *)second, secondCount);
}
#endif

static inline uint32_t cairn_crc32c_pair(const void *bytes, size_t count, const void *second, size_t secondCount) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return cairn_crc32c_hardware_pair(bytes, count, second, secondCount);
#endif
    return cairn_crc32c_extend(cairn_crc32c_extend(0, bytes, count), second, secondCount);
}

/*
 * LMDB's default key order (bytewise, a shorter key first when it is a prefix of the
 * other), computed eight bytes at a time as big-endian words: the comparison every table's
 * B-tree search calls at each node it passes (about 20 for a point read of a million
 * records), where LMDB's own called memcmp through the PLT. The order is exactly LMDB's
 * default, so a data file reads the same with it or without it (mdb_stat, other tools).
 */
static inline int cairn_compare_bytes(const void *leftBytes, size_t leftCount, const void *rightBytes, size_t rightCount) {
    const uint8_t *left = (const uint8_t *)leftBytes, *right = (const uint8_t *)rightBytes;
    size_t common = leftCount < rightCount ? leftCount : rightCount;
    size_t offset = 0;
    /* The first two words without the loop's bookkeeping: keys of 16 bytes or more (an
     * object's record key, the benchmark's keys) are mostly told apart there. */
    if (common >= 16) {
        uint64_t x0, y0, x1, y1;
        __builtin_memcpy(&x0, left, 8);
        __builtin_memcpy(&y0, right, 8);
        __builtin_memcpy(&x1, left + 8, 8);
        __builtin_memcpy(&y1, right + 8, 8);
        if (x0 != y0) {
            x0 = __builtin_bswap64(x0);
            y0 = __builtin_bswap64(y0);
            return x0 < y0 ? -1 : 1;
        }
        if (x1 != y1) {
            x1 = __builtin_bswap64(x1);
            y1 = __builtin_bswap64(y1);
            return x1 < y1 ? -1 : 1;
        }
        offset = 16;
    }
    for (; offset + 8 <= common; offset += 8) {
        uint64_t x, y;
        __builtin_memcpy(&x, left + offset, 8);
        __builtin_memcpy(&y, right + offset, 8);
        if (x != y) {
            x = __builtin_bswap64(x);
            y = __builtin_bswap64(y);
            return x < y ? -1 : 1;
        }
    }
    for (; offset < common; offset++) {
        if (left[offset] != right[offset]) return left[offset] < right[offset] ? -1 : 1;
    }
    return (leftCount > rightCount) - (leftCount < rightCount);
}

/* The same order as LMDB's comparator, which its tables are opened with. */
static inline int cairn_compare_keys(const MDB_val *a, const MDB_val *b) {
    return cairn_compare_bytes(a->mv_data, a->mv_size, b->mv_data, b->mv_size);
}

/*
 * Loads and stores of one 64-bit word shared with other processes through a MAP_SHARED
 * mapping (KVEngine's PublishedProgress): the writer's store is a release, so that a
 * reader whose acquire load sees a version also sees every log byte written before it.
 * Swift's Synchronization.Atomic cannot be placed at an address inside a mapping.
 */
static inline void cairn_store_release_u64(uint64_t *address, uint64_t value) {
    __atomic_store_n(address, value, __ATOMIC_RELEASE);
}

static inline uint64_t cairn_load_acquire_u64(const uint64_t *address) {
    return __atomic_load_n(address, __ATOMIC_ACQUIRE);
}

/* Starts loading the cache line at `address` for a write soon (KVEngine's OverlayTable, whose
 * buckets a large publish reaches in no order the hardware can predict). Never faults. */
static inline void cairn_prefetch_for_write(const void *address) {
    __builtin_prefetch(address, 1, 3);
}

#endif
