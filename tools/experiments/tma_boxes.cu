// A maintainer's experiment, not part of the course: how far a TMA pipeline over a matrix
// gets towards the read-only kernel, by box height (bytes per barrier wait), stages and
// blocks per SM. The measurements behind chapter 08's step 5 (docs/08_cp_async_ptx.md,
// "Bytes per wait: what the plan decides"). Meson builds it with the course (common/'s
// timing and tiled-sum helpers, chapter 08's PTX wrappers); run
// build/tools/experiments/tma_boxes on an sm_90 GPU.
//
// Prints CSV: cols,pitch,box_rows,stages,blocks_per_sm,ms,of_read_only,right (of_read_only:
// against the read-only kernel at the same blocks per SM; right: the sums checked).
#include "device.cuh"

#include "cml/errors.hpp"
#include "cml/stream.hpp"
#include "cml/timing.hpp"
#include "cml/tile_sum.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdio>
#include <vector>

using namespace ch08;

namespace {

// Both kernels of a configuration alternate, after a warm-up: medians of 7.
constexpr cml::TimingOptions kTiming{2, 7};

constexpr int kCols = 256;  // box width in words: 1 KiB rows, TMA's widest box

// Every word of each box (TMA zero-fills what lies outside the matrix), summed by the
// block's threads 16 bytes at a time; the barrier pipeline of chapter 08's step 4.
__global__ void __launch_bounds__(256)
    tma_sum(const __grid_constant__ CUtensorMap map, int rows, int cols, int box_rows, int stages, Word* partial) {
  extern __shared__ __align__(128) Word land[];
  __shared__ std::uint64_t full[8];
  const int across = (cols + kCols - 1) / kCols, down = (rows + box_rows - 1) / box_rows;
  const std::size_t boxes = static_cast<std::size_t>(across) * down;
  const int box_words = box_rows * kCols;
  const unsigned box_bytes = static_cast<unsigned>(box_words) * 4u;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) mbarrier_init(&full[s], 1);
    fence_proxy_async_shared();
  }
  __syncthreads();
  const auto start = [&](std::size_t k) {
    const std::size_t t = blockIdx.x + k * gridDim.x;
    if (t >= boxes) return;
    const int s = static_cast<int>(k % stages);
    mbarrier_arrive_expect_tx(&full[s], box_bytes);
    tensor_load_2d(land + s * box_words, &map, static_cast<int>(t % across) * kCols,
                   static_cast<int>(t / across) * box_rows, &full[s]);
  };
  if (threadIdx.x == 0)
    for (int k = 0; k + 1 < stages; ++k) start(k);
  Word acc = 0;
  for (std::size_t k = 0; blockIdx.x + k * gridDim.x < boxes; ++k) {
    if (threadIdx.x == 0) start(k + stages - 1);
    const int s = static_cast<int>(k % stages);
    while (!mbarrier_try_wait_parity(&full[s], static_cast<unsigned>(k / stages) & 1u)) {
    }
    const Word* box = land + s * box_words;
    for (int p = (threadIdx.x + 128) % 256; p < box_words / 4; p += 256) {
      const uint4 v = *reinterpret_cast<const uint4*>(box + 4 * p);
      acc += v.x + v.y + v.z + v.w;
    }
    __syncthreads();
  }
  cml::tile_sum::finish_block(acc, partial);
}

PFN_cuTensorMapEncodeTiled_v12000 encode() {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
}

}  // namespace

int main() {
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CUDA_CHECK(cudaFuncSetAttribute(tma_sum, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  const auto enc = encode();
  const cml::Stream stream;
  std::printf("cols,pitch,box_rows,stages,blocks_per_sm,ms,of_read_only,right\n");
  for (const std::size_t cols : {std::size_t{8192}, std::size_t{8191}}) {
    const std::size_t pitch = (cols + 3) / 4 * 4, rows = (std::size_t{1} << 30) / (pitch * 4);
    std::vector<Word> host(rows * pitch, 0u);
    Word want = 0;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) want += host[r * pitch + c] = cml::tile_sum::word_at(r * cols + c);
    Word* d = nullptr;
    Word* partial = nullptr;
    CUDA_CHECK(cudaMalloc(&d, host.size() * 4));
    CUDA_CHECK(cudaMalloc(&partial, 4096 * 4));
    cml::upload(d, host.data(), host.size());
    for (const int box_rows : {4, 8, 16, 32, 64})
      for (const int stages : {2, 3, 4, 6, 8})
        for (const int per_sm : {1, 2, 4}) {
          const std::size_t smem = static_cast<std::size_t>(stages) * box_rows * kCols * 4;
          if (per_sm * (smem + 1024) > 227 * 1024 || smem > 200 * 1024) continue;
          CUtensorMap map{};
          const cuuint64_t dims[2] = {cols, rows};
          const cuuint64_t strides[1] = {pitch * 4};
          const cuuint32_t box[2] = {kCols, static_cast<cuuint32_t>(box_rows)};
          const cuuint32_t es[2] = {1, 1};
          if (enc(&map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, d, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                  CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            std::printf("# encode refused box_rows %d\n", box_rows);
            continue;
          }
          const int blocks = per_sm * sms;
          const cml::Work ro = [&](cudaStream_t s) {
            cml::tile_sum::sum_read_only(cml::tile_sum::make_job(d, rows * pitch, partial, blocks, 0, 1), s);
          };
          const cml::Work tma = [&](cudaStream_t s) {
            tma_sum<<<blocks, 256, smem, s>>>(map, static_cast<int>(rows), static_cast<int>(cols), box_rows, stages,
                                              partial);
            CUDA_CHECK_LAUNCH();
          };
          tma(stream);
          CUDA_CHECK(cudaStreamSynchronize(stream));
          std::vector<Word> got(static_cast<std::size_t>(blocks));
          CUDA_CHECK(cudaMemcpy(got.data(), partial, got.size() * 4, cudaMemcpyDeviceToHost));
          Word sum = 0;
          for (Word g : got) sum += g;
          const auto st = cml::time_interleaved({ro, tma}, stream, kTiming);
          const double ra = st[0].median_ms, rb = st[1].median_ms;
          std::printf("%zu,%zu,%d,%d,%d,%.4f,%.3f,%d\n", cols, pitch, box_rows, stages, per_sm, rb,
                      ra / rb * (static_cast<double>(cols) / pitch), sum == want ? 1 : 0);
          std::fflush(stdout);
        }
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaFree(partial));
  }
  return 0;
}
