// Product quantization as Lance 12 builds and searches it (lance-index vector/pq):
//
//   index::pq::params p;                       // m = 16, 8 bits, 50 iterations...
//   auto pq = index::pq::train(rows, n, dim, p, distance_type::l2, &pool);
//   std::vector<uint8_t> codes(n * pq.code_bytes());
//   index::pq::encode(pq, rows, n, codes.data(), &pool);          // row-major codes
//   index::pq::distance_table table(pq, query);                   // per query
//   table.scan(transposed_codes, n, distances);                    // per partition
//
// What follows Lance:
// - codebook [m][2^bits][dim/m], one k-means (k = 2^bits, l2, max_iters 50, one
//   redo, no balance term) per sub-vector over that sub-vector's values; the
//   training sample is sample_rate * 2^bits rows (65536 for 8 bits); each k-means
//   starts from random rows (Lance's), except 8-bit dot-product codebooks of short
//   sub-vectors (params::init), which lancet seeds with k-means++;
// - inside an IVF index Lance trains on residuals to the nearest centroid (l2) for
//   l2 and cosine (cosine normalises first) and on the raw vectors for dot, always
//   with l2 k-means, and encodes the same way: train_for_ivf / encode_for_ivf;
// - codes: the nearest centroid of each sub-vector under l2 (code 0 when no
//   distance is finite, as Lance); 4-bit codes pack two sub-vectors per byte, the
//   even one in the low nibble; storage transposes codes per partition to
//   [code_bytes][n] (transpose_codes);
// - distance tables [m][2^bits] of f32: l2 is the squared distance of each query
//   sub-vector to each centroid, dot is 1 - q.c; a code's distance is the sum over
//   sub-vectors, minus (m - 1) for dot (so that dot gives 1 - x.y). Cosine indexes
//   search with l2 over normalised vectors, as Lance.
// - the vectors keep their element type through normalisation and residuals, and
//   the codebook has it too (f16 codebooks for f16 vectors).
// Verified against LanceDB 0.39 (tests/fixtures/quantizer): for LanceDB's codebook and
// centroids our codes equal LanceDB's byte for byte (8 and 4 bits; l2, dot, cosine;
// f32 and f16), and our scans return LanceDB's neighbours with its distances.
// Where lancet differs: training is seeded (Lance uses OS entropy); 8-bit dot
// codebooks of short sub-vectors start from k-means++ seeding (bench/RESULTS.md,
// pq_recall_sweep); the codebook may be an earlier iterate of the same k-means runs (after
// 1, 3 or 10 iterations) where that ranks the training sample's neighbours clearly
// better (params::choose_iterate, iterate.hpp; off: Lance's ends of the runs);
// sub-vectors train with a dedicated short-vector k-means (same algorithm, several
// times faster than the generic one); 4-bit scans sum exact f32 distances (Lance
// quantizes the table to u8 past the first 200 rows of a partition);
// params::max_sample_rows lets the IVF builder train on fewer rows than Lance's sample
// when its memory budget cannot hold them (train_for_ivf_in_place trains without a
// copy of its rows).
//
// Results are identical for any thread count.
// The model is in model.hpp, encoding in encode.hpp, the scans in scan.hpp,
// the choice of iterate in iterate.hpp and training in train.hpp (each header
// includes the ones before it).
#pragma once

#include "lancet/index/quantizer/pq/encode.hpp"
#include "lancet/index/quantizer/pq/iterate.hpp"
#include "lancet/index/quantizer/pq/model.hpp"
#include "lancet/index/quantizer/pq/scan.hpp"
#include "lancet/index/quantizer/pq/train.hpp"
