// See cml/host_pool.hpp. One job at a time: run() publishes the task and its count under
// the mutex and bumps the generation; workers and the caller take task indices one by one
// until none are left; the caller waits until every taken task has finished.
#include "cml/host_pool.hpp"

#include <algorithm>

namespace cml {

HostPool::HostPool(std::size_t threads) {
  if (threads == 0) threads = std::min<std::size_t>(7, std::max(1u, std::thread::hardware_concurrency()) / 2);
  for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(0); });
}

HostPool::~HostPool() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void HostPool::drain() {
  std::unique_lock<std::mutex> lock(m_);
  while (next_ < count_) {
    const std::size_t i = next_++;
    const auto* task = task_;
    lock.unlock();
    std::exception_ptr failed;
    try {
      (*task)(i);
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    if (failed && !error_) error_ = failed;
    if (++finished_ == count_) done_.notify_all();
  }
}

void HostPool::work(std::size_t seen) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain();
  }
}

void HostPool::run(std::size_t n, const std::function<void(std::size_t)>& task) {
  if (n == 0) return;
  std::lock_guard<std::mutex> one_job(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(m_);
    task_ = &task;
    next_ = 0;
    count_ = n;
    finished_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return finished_ == count_; });
    task_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

HostPool& host_pool() {
  static HostPool pool;
  return pool;
}

}  // namespace cml
