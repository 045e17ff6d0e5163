// Internal: the search behind the super6 weight-only format (ScaleType::super6): Q4_K's search,
// then a least-squares refit of the super-block factors and a local search of the sub-parameters.
#pragma once

#include <cstdint>

namespace lucid::quantization::weight_only {

/// One super-block of 8 groups of 32 (docs/formats.md, "Super-block format"):
/// ŵ = fl(fl(d · sc[j]) · q) − fl(dmin · m[j]) for group j, q in 0..15, sc and m in 0..63.
struct SuperBlock {
  std::uint16_t d = 0, dmin = 0;  ///< float16 bits
  std::uint8_t sc[8] = {}, m[8] = {};
};

/// The parameters and codes (q[0, 256)) of one ggml Q4_K block (144 bytes, ggml's layout):
/// the same information, so ggml's decode equals the super6 decode bit for bit.
SuperBlock unpack_q4_k(const void* block, std::uint8_t* q);

/// Chooses the parameters and the codes q[0, 256) of 256 finite weights w. Two starts: what
/// ggml's Q4_K quantizer stores (lucidq's byte-identical reference quantize_row_q4_k), and
/// ggml's same search and block finish with unit element weights. From each, up to `passes`
/// times: refit (d, dmin) by least squares over the super-block (with the float16 neighbours of
/// the fit), re-round the codes to the stored parameters, try every sc, m within ±3 of each
/// group's; a change is kept only when it lowers Σ (w − ŵ)² evaluated with the stored values.
/// The better of the two ends is returned, so its error is never above Q4_K's. Deterministic.
/// Throws nothing; a d or dmin that would overflow float16 is never chosen.
SuperBlock search_superblock(const float* w, std::uint8_t* q, int passes = 4);

}  // namespace lucid::quantization::weight_only
