// The dedupe window's bucket scan (ChatLinkDaemon's RecentIDs), in C for SSE2's compares and
// movemask: Swift's SIMD types have no lane-wise compare to a mask of bits that compiles to
// them, and their arithmetic stand-in cost three times the instructions. Header only: the
// function is inlined where Swift calls it.
#ifndef CHATLINK_BUCKET_H
#define CHATLINK_BUCKET_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// A bucket is 16 entries of 32 bits (64 bytes): lanes 0 to 14 hold a 10-bit fingerprint above a
// 22-bit seq, lane 15 a seq alone. A seq is live while fewer than `capacity` inserts came after
// it: ((now - 1 - seq) & 0x3FFFFF) < capacity, with `now` the next insert's seq and `capacity`
// below 2^22.
//
// Both functions return bit n set when lane n's seq is live, and bit 16 + n when lane n (0 to
// 14) is live and holds `fingerprint` (already shifted to the top 10 bits). This one reads a lane
// at a time: where SSE2 is missing, and for the tests, which hold the other to it.
static inline uint32_t chatlink_bucket_scan_lanes(
    const void *line, uint32_t fingerprint, uint32_t now, uint32_t capacity) {
  uint32_t entries[16];
  uint32_t bits = 0;
  memcpy(entries, line, sizeof entries);
  for (int lane = 0; lane < 16; lane++) {
    const uint32_t entry = entries[lane];
    if (((now - 1 - entry) & 0x3FFFFF) >= capacity) continue;
    bits |= 1u << lane;
    if (lane < 15 && (entry & ~0x3FFFFFu) == fingerprint) bits |= 1u << (16 + lane);
  }
  return bits;
}

// The same scan, with SSE2: four lanes an instruction, about fifty instructions in all.
static inline uint32_t chatlink_bucket_scan(
    const void *line, uint32_t fingerprint, uint32_t now, uint32_t capacity) {
#if defined(__SSE2__)
  const __m128i seqs = _mm_set1_epi32(0x3FFFFF);
  const __m128i before = _mm_set1_epi32((int32_t)(now - 1));
  const __m128i limit = _mm_set1_epi32((int32_t)capacity);
  const __m128i wanted = _mm_set1_epi32((int32_t)fingerprint);
  __m128i live[4], same[4];
  for (int i = 0; i < 4; i++) {
    // Unaligned loads: as fast as aligned ones on an aligned line, and no fault if it is not.
    __m128i entries = _mm_loadu_si128((const __m128i *)line + i);
    // Ages are below 2^22, so a signed compare orders them.
    live[i] = _mm_cmpgt_epi32(limit, _mm_and_si128(_mm_sub_epi32(before, entries), seqs));
    same[i] = _mm_and_si128(live[i], _mm_cmpeq_epi32(_mm_andnot_si128(seqs, entries), wanted));
  }
  // All-ones or zero lanes narrow to bytes without loss: one bit a lane.
  const __m128i liveBytes = _mm_packs_epi16(
      _mm_packs_epi32(live[0], live[1]), _mm_packs_epi32(live[2], live[3]));
  const __m128i sameBytes = _mm_packs_epi16(
      _mm_packs_epi32(same[0], same[1]), _mm_packs_epi32(same[2], same[3]));
  return (uint32_t)_mm_movemask_epi8(liveBytes)
      | ((uint32_t)_mm_movemask_epi8(sameBytes) & 0x7FFF) << 16;
#else
  return chatlink_bucket_scan_lanes(line, fingerprint, now, capacity);
#endif
}

#endif
