// Chapter 07 — --mode=trivially-copyable: the guide says cp.async can accelerate
// memcpy_async only for trivially copyable element types, since any other type needs its
// copy constructor run for every element. What the library does, shown by a run: the same
// cuda::memcpy_async copies an array of a trivially copyable struct and an array of a
// struct whose copy constructor counts the copies, and a third kernel copy-constructs each
// element into shared memory (what "each element's copy constructor" means). Each result is
// checked against the CPU, and each kernel's SASS is read from this program (cml::sass).
#include "trivially_copyable.hpp"

#include "memcpy_async.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/sass.hpp"
#include "cml/table.hpp"
#include "cml/verify.hpp"

#include <cuda/pipeline>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

namespace ch07 {

// Copying its bytes is copying it: trivially copyable.
struct Sample {
  float x, y, z, w;
};
static_assert(std::is_trivially_copyable<Sample>::value, "Sample must be trivially copyable");

// Not trivially copyable: its copy constructor does what a copy of the bytes does not — the
// copy's `copies` is one more than the original's. So the result tells whether a copy ran
// the constructor (copies + 1) or moved bytes (copies unchanged). The default constructor is
// trivial, so an array of it may live in __shared__ memory (nvcc warns about a __shared__
// object whose constructor would have to run).
struct Counted {
  Word value;
  Word copies;
  Counted() = default;
  __host__ __device__ Counted(const Counted& o) : value(o.value), copies(o.copies + 1) {}
  Counted& operator=(const Counted&) = delete;
};
static_assert(!std::is_trivially_copyable<Counted>::value, "Counted must not be trivially copyable");

// Stores the words of `src` at `dst`: no constructor or assignment of T runs, so what `out`
// holds is what reached shared memory.
template <class T>
__device__ __forceinline__ void store_words(T* dst, const T& src) {
  static_assert(sizeof(T) % sizeof(Word) == 0 && alignof(T) >= alignof(Word), "whole, aligned words");
  const Word* from = reinterpret_cast<const Word*>(&src);
  Word* to = reinterpret_cast<Word*>(dst);
#pragma unroll
  for (std::size_t k = 0; k < sizeof(T) / sizeof(Word); ++k) to[k] = from[k];
}

// Block b copies elements b * 256 .. + 255, b + gridDim.x ..., each thread its own element,
// with a thread-scope cuda::pipeline (the solution's step 3): memcpy_async, commit, wait.
// The thread then reads back only the element it copied itself, so its own wait is enough
// (no barrier).
template <class T>
__device__ __forceinline__ void copy_with_memcpy_async(const T* in, std::size_t n, T* out) {
  __shared__ T tile[kThreads];
  auto pipe = cuda::make_pipeline();
  for (std::size_t first = static_cast<std::size_t>(blockIdx.x) * kThreads; first < n;
       first += static_cast<std::size_t>(gridDim.x) * kThreads) {
    const std::size_t i = first + threadIdx.x;
    pipe.producer_acquire();
    if (i < n) cuda::memcpy_async(&tile[threadIdx.x], &in[i], sizeof(T), pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    if (i < n) store_words(&out[i], tile[threadIdx.x]);
    pipe.consumer_release();
  }
}

__global__ void __launch_bounds__(kThreads) memcpy_async_samples_kernel(const Sample* in, std::size_t n, Sample* out) {
  copy_with_memcpy_async(in, n, out);
}

// The same call with the type that is not trivially copyable: nvcc 13.0 compiles it
// (the pipeline overloads do not check the type; the barrier overloads refuse it with a
// static_assert, docs/07).
__global__ void __launch_bounds__(kThreads)
    memcpy_async_counted_kernel(const Counted* in, std::size_t n, Counted* out) {
  copy_with_memcpy_async(in, n, out);
}

// What "each element's copy constructor" is: placement new of a copy in shared memory, the
// element loaded into registers and stored (LDG, STS), then out as words.
__global__ void __launch_bounds__(kThreads) construct_counted_kernel(const Counted* in, std::size_t n, Counted* out) {
  __shared__ Counted tile[kThreads];
  for (std::size_t first = static_cast<std::size_t>(blockIdx.x) * kThreads; first < n;
       first += static_cast<std::size_t>(gridDim.x) * kThreads) {
    const std::size_t i = first + threadIdx.x;
    if (i < n) {
      new (&tile[threadIdx.x]) Counted(in[i]);
      store_words(&out[i], tile[threadIdx.x]);
    }
  }
}

namespace {

constexpr std::size_t kElements = 100'003;  // not a multiple of the block
constexpr int kBlocks = 37;

// Runs `kernel` over `host` on the device and returns what it wrote (out poisoned first).
template <class T, class Kernel>
std::vector<T> run_copy(Kernel kernel, const std::vector<T>& host, cudaStream_t stream) {
  cml::DeviceBuffer<T> in(host.size()), out(host.size());
  cml::upload(in.data(), host.data(), host.size());
  cml::fill_bytes(out.data(), 0xFF, out.bytes());
  kernel<<<kBlocks, kThreads, 0, stream>>>(in.data(), host.size(), out.data());
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<T> got(host.size());
  CUDA_CHECK(cudaMemcpy(got.data(), out.data(), out.bytes(), cudaMemcpyDeviceToHost));
  return got;
}

// The elements as 32-bit words, for an exact comparison of their bytes.
template <class T>
std::vector<Word> words_of(const std::vector<T>& v) {
  static_assert(sizeof(T) % sizeof(Word) == 0, "whole words");
  std::vector<Word> w(v.size() * sizeof(T) / sizeof(Word));
  std::memcpy(w.data(), v.data(), w.size() * sizeof(Word));
  return w;
}

// "4 LDGSTS, 0 LDG, 0 STS" for the kernel named `name` in this program's SASS, or why not.
std::string sass_cell(const char* name) {
  std::string why;
  const auto* code = cml::sass::own_code(why);
  if (code == nullptr) return "(no SASS: " + why.substr(0, 60) + ")";
  const auto f = cml::sass::find(*code, std::string("ch07::") + name);
  if (!f) return "(not found)";
  return std::to_string(cml::sass::count(*f, "LDGSTS")) + " LDGSTS, " + std::to_string(cml::sass::count(*f, "LDG")) +
         " LDG, " + std::to_string(cml::sass::count(*f, "STS")) + " STS";
}

// How many elements' `copies` is one more than the input's: the copy constructor ran there.
std::size_t constructed(const std::vector<Counted>& got, const std::vector<Counted>& in) {
  std::size_t k = 0;
  for (std::size_t i = 0; i < in.size(); ++i) k += got[i].copies == in[i].copies + 1 ? 1 : 0;
  return k;
}

}  // namespace

bool trivially_copyable_mode(const cml::Run& run, cudaStream_t stream) {
  const int cc = run.facts.cc();
  std::printf(
      "\n== memcpy_async and the element type: %zu elements on %d blocks. %s is compute capability %d.%d: "
      "%s ==\n",
      kElements, kBlocks, run.facts.name.c_str(), run.facts.cc_major, run.facts.cc_minor,
      cc >= 80 ? "cp.async exists (8.0 and later), so the library's copies can be LDGSTS"
               : "no cp.async (it needs 8.0): memcpy_async works, its copies go through registers "
                 "(LDG, STS) and complete at once");
  std::vector<Sample> samples(kElements);
  std::vector<Counted> counted(kElements);
  for (std::size_t i = 0; i < kElements; ++i) {
    samples[i] = {static_cast<float>(i), 0.5f * static_cast<float>(i), -1.0f * static_cast<float>(i), 3.25f};
    counted[i].value = cml::tile_sum::word_at(i);
    counted[i].copies = static_cast<Word>(i % 7);
  }
  std::vector<Counted> constructed_want;  // what a copy constructor per element gives
  constructed_want.reserve(kElements);
  for (const auto& c : counted) constructed_want.push_back(c);  // Counted's own constructor, on the CPU

  const auto got_samples = run_copy(memcpy_async_samples_kernel, samples, stream);
  const auto got_counted = run_copy(memcpy_async_counted_kernel, counted, stream);
  const auto got_constructed = run_copy(construct_counted_kernel, counted, stream);

  const auto check = [](const auto& got, const auto& want) {
    const auto g = words_of(got), w = words_of(want);
    return cml::compare_exact(g.data(), w.data(), g.size());
  };
  const auto r_samples = check(got_samples, samples);
  const auto r_counted = check(got_counted, counted);
  const auto r_constructed = check(got_constructed, constructed_want);
  const auto ran = [&](const std::vector<Counted>& got) {
    const std::size_t k = constructed(got, counted);
    return k == 0           ? std::string("no: copies unchanged (bytes moved)")
           : k == kElements ? std::string("yes, on every element (copies + 1)")
                            : "on " + std::to_string(k) + " of " + std::to_string(kElements) + " elements";
  };

  cml::Table t("trivially_copyable", {"copy", "element", "trivially copyable", "SASS of the kernel (this program)",
                                      "copy constructor ran", "check"});
  t.row({"cuda::memcpy_async, thread-scope pipeline", "Sample (4 floats)", "yes",
         sass_cell("memcpy_async_samples_kernel"), "-", r_samples.ok ? "bytes equal" : "WRONG"});
  t.row({"cuda::memcpy_async, thread-scope pipeline", "Counted (copy constructor)", "no",
         sass_cell("memcpy_async_counted_kernel"), ran(got_counted), r_counted.ok ? "bytes equal" : "WRONG"});
  t.row({"placement new of a copy, per element", "Counted (copy constructor)", "no",
         sass_cell("construct_counted_kernel"), ran(got_constructed), r_constructed.ok ? "copies + 1" : "WRONG"});
  run.emit(t);

  bool ok = cml::report(r_samples, "memcpy_async of Sample (the bytes of every element)");
  ok &= cml::report(r_counted,
                    "memcpy_async of Counted: its bytes, copies unchanged (CUDA 13.0's library runs no "
                    "copy constructor on the pipeline path: docs/07, \"Trivially copyable types\")");
  ok &= cml::report(r_constructed, "placement new of a copy of Counted (copies + 1 on every element)");
  std::printf(
      "(the SASS is of this program's file, for the target it was built for; the barrier overloads of "
      "cuda::memcpy_async refuse Counted at compile time with a static_assert, so no kernel here uses them)\n");
  return ok;
}

}  // namespace ch07
