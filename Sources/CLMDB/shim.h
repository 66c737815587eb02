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
__attribute__((target("sse4.2")))
static inline uint32_t cairn_crc32c_hardware(uint32_t crc, const uint8_t *bytes, size_t count) {
    uint64_t wide = crc;
    while (count >= 8) {
        uint64_t word;
        __builtin_memcpy(&word, bytes, 8);
        wide = __builtin_ia32_crc32di(wide, word);
        bytes += 8;
        count -= 8;
    }
    uint32_t narrow = (uint32_t)wide;
    while (count > 0) {
        narrow = __builtin_ia32_crc32qi(narrow, *bytes);
        bytes++;
        count--;
    }
    return narrow;
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

#endif
