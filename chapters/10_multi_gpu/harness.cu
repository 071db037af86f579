// Chapter 10 — see harness.hpp.
#include "harness.hpp"

#include "cml/needs.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace ch10 {

std::vector<int> chapter_devices(int at_least) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  if (count < at_least)
    throw cml::Skip("needs " + cml::needs::count_words(at_least, "GPU") + "; this machine has " +
                    (count == 1 ? std::string("one") : cml::needs::count_words(count, "GPU")));
  std::vector<int> devices;
  for (int d = 0; d < count && d < kMaxDevices; ++d) devices.push_back(d);
  return devices;
}

// ---- DeviceArray -------------------------------------------------------------------------

DeviceArray::DeviceArray(int device, std::size_t n) : device_(device), n_(n) {
  const OnDevice on(device);
  CUDA_CHECK(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(float)));
}

DeviceArray::~DeviceArray() {
  if (p_ == nullptr) return;
  cml::release_noexcept(
      [&] {
        const OnDevice on(device_);
        CUDA_CHECK(cudaFree(p_));
      },
      "cudaFree (DeviceArray)");
}

DeviceArray::DeviceArray(DeviceArray&& o) noexcept
    : device_(o.device_), p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}

DeviceArray& DeviceArray::operator=(DeviceArray&& o) noexcept {
  if (this != &o) {
    DeviceArray old(std::move(*this));
    device_ = o.device_;
    p_ = std::exchange(o.p_, nullptr);
    n_ = std::exchange(o.n_, 0);
  }
  return *this;
}

void DeviceArray::upload(const std::vector<float>& v, std::size_t offset) const {
  const OnDevice on(device_);
  CUDA_CHECK(cudaMemcpy(p_ + offset, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());  // lands before work on a non-blocking stream
}

std::vector<float> DeviceArray::download() const {
  std::vector<float> v(n_);
  const OnDevice on(device_);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(v.data(), p_, n_ * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

// ---- Team ----------------------------------------------------------------------------------

Team::Team(const std::vector<int>& devices, std::size_t staging_bytes)
    // Portable: pinned for every device's copies, not only the one current when allocated.
    : staging_(std::max<std::size_t>(staging_bytes, 1), cudaHostAllocPortable), staging_bytes_(staging_bytes) {
  try {
    for (int d : devices) {
      const OnDevice on(d);
      Member m;
      m.device = d;
      members_.push_back(m);  // released by the destructor from here on, whatever fails next
      Member& mine = members_.back();
      CUDA_CHECK(cudaStreamCreateWithFlags(&mine.compute, cudaStreamNonBlocking));
      // The edges stream at the device's highest priority: its few blocks are scheduled
      // before the waiting blocks of a large inner-rows kernel, so the halos leave early.
      int lowest = 0, highest = 0;
      CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
      CUDA_CHECK(cudaStreamCreateWithPriority(&mine.edges, cudaStreamNonBlocking, highest));
      for (cudaEvent_t* e : {&mine.sent, &mine.edges_sent, &mine.done, &mine.step_done})
        CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    }
  } catch (...) {
    release();
    throw;
  }
}

Team::~Team() { release(); }

void Team::release() noexcept {
  for (Member& m : members_) {
    cml::release_noexcept(
        [&] {
          const OnDevice on(m.device);
          for (cudaStream_t s : {m.compute, m.edges})
            if (s != nullptr) CUDA_CHECK(cudaStreamSynchronize(s));
          for (cudaEvent_t e : {m.sent, m.edges_sent, m.done, m.step_done})
            if (e != nullptr) CUDA_CHECK(cudaEventDestroy(e));
          for (cudaStream_t s : {m.compute, m.edges})
            if (s != nullptr) CUDA_CHECK(cudaStreamDestroy(s));
        },
        "releasing a device's streams and events");
  }
  members_.clear();
}

std::vector<int> Team::devices() const {
  std::vector<int> out;
  for (const Member& m : members_) out.push_back(m.device);
  return out;
}

Link Team::link(int a, int b) const {
  Link l;
  l.src_device = (*this)[a].device;
  l.dst_device = (*this)[b].device;
  l.src_stream = (*this)[a].compute;
  l.dst_stream = (*this)[b].compute;
  l.sent = (*this)[a].sent;
  l.staging = staging_.data();
  l.staging_bytes = staging_bytes_;
  return l;
}

void Team::synchronize() const {
  for (const Member& m : members_) {
    const OnDevice on(m.device);
    CUDA_CHECK(cudaStreamSynchronize(m.compute));
    CUDA_CHECK(cudaStreamSynchronize(m.edges));
  }
}

PeerMatrix peer_capability(const std::vector<int>& devices) {
  PeerMatrix m;
  m.count = static_cast<int>(devices.size());
  for (int i = 0; i < m.count; ++i) {
    m.devices[i] = devices[static_cast<std::size_t>(i)];
    for (int j = 0; j < m.count; ++j) {
      int can = 0;
      if (i != j)
        CUDA_CHECK(
            cudaDeviceCanAccessPeer(&can, devices[static_cast<std::size_t>(i)], devices[static_cast<std::size_t>(j)]));
      m.enabled[i][j] = can != 0;
    }
  }
  return m;
}

std::string describe(const PeerMatrix& m) {
  std::string out;
  for (int i = 0; i < m.count; ++i)
    for (int j = 0; j < m.count; ++j)
      if (m.enabled[i][j])
        out += (out.empty() ? "" : " ") + std::to_string(m.devices[i]) + "->" + std::to_string(m.devices[j]);
  return out.empty() ? "none" : out;
}

// ---- The grid --------------------------------------------------------------------------------

std::vector<float> initial_grid(int rows, int cols, unsigned seed) {
  std::vector<float> g(static_cast<std::size_t>(rows + 2) * static_cast<std::size_t>(cols));
  for (std::size_t i = 0; i < g.size(); ++i) {
    std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u ^ seed * 40503u;
    x ^= x >> 15;
    g[i] = static_cast<float>(x % 1000u) / 10.0f;
  }
  return g;
}

std::vector<float> jacobi_reference(std::vector<float> grid, int rows, int cols, int iterations) {
  std::vector<float> next = grid;
  const auto at = [cols](std::vector<float>& v, int r, int c) -> float& {
    return v[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)];
  };
  for (int it = 0; it < iterations; ++it) {
    for (int r = 1; r <= rows; ++r)
      for (int c = 1; c + 1 < cols; ++c)
        at(next, r, c) = 0.25f * (at(grid, r - 1, c) + at(grid, r + 1, c) + at(grid, r, c - 1) + at(grid, r, c + 1));
    std::swap(grid, next);
  }
  return grid;
}

std::vector<int> split_rows(int rows, int count) {
  std::vector<int> out;
  for (int d = 0; d < count; ++d) out.push_back(rows / count + (d < rows % count ? 1 : 0));
  return out;
}

Bands::Bands(const Team& team, const std::vector<float>& grid, int rows, int cols)
    : grid_(grid), rows_(rows), cols_(cols) {
  const std::vector<int> split = split_rows(rows, team.size());
  for (int d = 0; d < team.size(); ++d) {
    const std::size_t n = static_cast<std::size_t>(split[static_cast<std::size_t>(d)] + 2) * cols;
    a_.emplace_back(team[d].device, n);
    b_.emplace_back(team[d].device, n);
    Slab s;
    s.device = team[d].device;
    s.rows = split[static_cast<std::size_t>(d)];
    s.compute = team[d].compute;
    s.edges = team[d].edges;
    s.edges_sent = team[d].edges_sent;
    s.done = team[d].done;
    slabs_.push_back(s);
  }
  reset();
}

void Bands::reset() {
  std::size_t first_row = 0;  // the band's row 0 in the grid's numbering
  for (std::size_t d = 0; d < slabs_.size(); ++d) {
    Slab& s = slabs_[d];
    const std::size_t n = static_cast<std::size_t>(s.rows + 2) * cols_;
    const std::vector<float> band(grid_.begin() + static_cast<std::ptrdiff_t>(first_row * cols_),
                                  grid_.begin() + static_cast<std::ptrdiff_t>(first_row * cols_ + n));
    a_[d].upload(band);
    b_[d].upload(band);  // the halos and boundary columns of `next` start right too
    s.cur = a_[d].data();
    s.next = b_[d].data();
    first_row += static_cast<std::size_t>(s.rows);
  }
}

std::vector<float> Bands::gather() const {
  std::vector<float> out = grid_;  // the fixed boundary rows stay as they were
  std::size_t first_row = 1;
  for (std::size_t d = 0; d < slabs_.size(); ++d) {
    const Slab& s = slabs_[d];
    const DeviceArray& cur = s.cur == a_[d].data() ? a_[d] : b_[d];
    const std::vector<float> band = cur.download();
    std::copy(band.begin() + cols_, band.begin() + static_cast<std::ptrdiff_t>((s.rows + 1) * cols_),
              out.begin() + static_cast<std::ptrdiff_t>(first_row * cols_));
    first_row += static_cast<std::size_t>(s.rows);
  }
  return out;
}

// ---- The ring -----------------------------------------------------------------------------------

float rank_value(int r, std::size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(r) * 13) % 64) - 32);
}

std::vector<float> ring_reference(int count, std::size_t n) {
  std::vector<float> sum(n, 0.0f);
  for (int r = 0; r < count; ++r)
    for (std::size_t i = 0; i < n; ++i) sum[i] += rank_value(r, i);
  return sum;
}

Ring::Ring(const Team& team, std::size_t n) : n_(n) {
  for (int r = 0; r < team.size(); ++r) {
    data_.emplace_back(team[r].device, n);
    Rank k;
    k.device = team[r].device;
    k.data = data_.back().data();
    k.stream = team[r].compute;
    k.step_done = team[r].step_done;
    ranks_.push_back(k);
  }
  refill();
}

void Ring::refill() {
  for (std::size_t r = 0; r < data_.size(); ++r) {
    std::vector<float> v(n_);
    for (std::size_t i = 0; i < n_; ++i) v[i] = rank_value(static_cast<int>(r), i);
    data_[r].upload(v);
  }
}

std::string Ring::first_wrong() const {
  const std::vector<float> want = ring_reference(static_cast<int>(data_.size()), n_);
  for (std::size_t r = 0; r < data_.size(); ++r) {
    const std::vector<float> got = data_[r].download();
    for (std::size_t i = 0; i < n_; ++i)
      if (got[i] != want[i])
        return "rank " + std::to_string(r) + " (device " + std::to_string(data_[r].device()) + "), element " +
               std::to_string(i) + " of " + std::to_string(n_) + ": " + std::to_string(got[i]) + ", want " +
               std::to_string(want[i]);
  }
  return "";
}

}  // namespace ch10
