// A small pool of host threads that stay alive between calls. Starting a thread costs tens
// of microseconds (about 50 us each on the course's H200 machine), which is as long as the
// work a chapter wants to spread out (packing a few MiB): so the threads are started once
// and reused.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cml {

class HostPool {
 public:
  // `threads` workers besides the caller (0: half the hardware threads, at most 7).
  explicit HostPool(std::size_t threads = 0);
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;
  ~HostPool();

  // Runs task(0) ... task(n - 1), spread over the workers and the calling thread, and
  // returns when all are done. If tasks throw, the first exception is rethrown here after
  // every task has finished. Calls from several threads at once are serialised.
  void run(std::size_t n, const std::function<void(std::size_t)>& task);

  // Workers plus the caller: how many tasks run at once.
  std::size_t width() const { return workers_.size() + 1; }

 private:
  void work(std::size_t generation_seen);
  void drain();  // takes tasks of the current job until none are left

  std::mutex run_mutex_;  // one job at a time
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(std::size_t)>* task_ = nullptr;
  std::size_t next_ = 0, count_ = 0, finished_ = 0, generation_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

// The process's shared pool, started on first use.
HostPool& host_pool();

}  // namespace cml
