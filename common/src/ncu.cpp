// See cml/ncu.hpp.
#include "cml/ncu.hpp"

#include "cml/tools.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace cml::ncu {

namespace {
// One CSV line into fields ("a","b,c" -> a | b,c).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"')
        quoted = false;
      else
        cur += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

std::vector<KernelMetrics> parse_raw_csv(const std::string& text, const std::vector<std::string>& metrics) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  std::vector<KernelMetrics> out;
  while (std::getline(in, line)) {
    if (line.rfind("\"ID\"", 0) == 0) {  // the header; the next line holds the units
      header = split_csv(line);
      std::getline(in, line);
      continue;
    }
    if (header.empty() || line.empty() || line[0] != '"') continue;
    const auto fields = split_csv(line);
    if (fields.size() != header.size()) continue;
    KernelMetrics k;
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == "Kernel Name") k.kernel = fields[i];
      for (const auto& m : metrics) {
        if (header[i] != m) continue;
        std::string v;
        for (char c : fields[i])
          if (c != ',') v += c;  // ncu may group digits: "1,234"
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        if (end != v.c_str()) k.values[m] = d;
      }
    }
    out.push_back(std::move(k));
  }
  return out;
}

std::optional<std::string> permission_problem(const std::string& text) {
  if (text.find("ERR_NVGPUCTRPERM") == std::string::npos) return std::nullopt;
  return std::string(
      "ncu may not read the GPU's performance counters for this user (ERR_NVGPUCTRPERM): run as root, "
      "or allow it with the nvidia module option NVreg_RestrictProfilingToAdminUsers=0");
}

std::string trouble_lines(const std::string& text, std::size_t limit) {
  std::istringstream in(text);
  std::string line, out;
  int after_failed = 0;  // Catch2 prints the message a few lines below FAILED:
  while (std::getline(in, line) && out.size() < limit) {
    const bool failed = line.find("FAILED:") != std::string::npos;
    const bool wanted = failed || after_failed > 0 || line.find("==ERROR==") != std::string::npos ||
                        line.find("Segmentation fault") != std::string::npos ||
                        line.find("Aborted") != std::string::npos;
    after_failed = failed ? 3 : after_failed - 1;
    std::size_t b = line.find_first_not_of(" \t\r");
    if (!wanted || b == std::string::npos) continue;
    out += (out.empty() ? "" : " | ") + line.substr(b, line.find_last_not_of(" \t\r") - b + 1);
  }
  return out.size() > limit ? out.substr(0, limit) + "..." : out;
}

namespace {
constexpr const char* kBusyReason =
    "another process held the GPU's profiling resources (a second ncu, nsys or DCGM): the counters could not "
    "be read; run the test again once it is done";
}  // namespace

std::optional<std::string> busy_problem(const std::string& text) {
  if (text.find("driver resource was unavailable") == std::string::npos) return std::nullopt;
  return std::string(kBusyReason);
}

namespace {
// This machine's one profile at a time: an exclusive flock on a shared file, waited for at
// most `patience` (then the caller gives busy_problem's reason, and the case skips).
class ProfilerLock {
 public:
  explicit ProfilerLock(std::chrono::seconds patience) {
    fd_ = open(kPath, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    // Another user's file in a sticky /tmp may not be opened with O_CREAT
    // (fs.protected_regular): open the one that is there.
    if (fd_ < 0 && errno == EACCES) fd_ = open(kPath, O_RDWR | O_CLOEXEC);
    if (fd_ < 0) {
      go_ahead_ = true;  // no file to share a lock through: profile unlocked
      return;
    }
    fchmod(fd_, 0666);  // another user's tests share it (umask may have narrowed the mode)
    const auto until = std::chrono::steady_clock::now() + patience;
    while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (std::chrono::steady_clock::now() > until) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    go_ahead_ = true;
  }
  // Held, or no lock could exist; false: another profile held it all the time allowed.
  bool go_ahead() const { return go_ahead_; }
  ~ProfilerLock() {
    if (fd_ >= 0) close(fd_);  // closing the file releases the lock
  }
  ProfilerLock(const ProfilerLock&) = delete;
  ProfilerLock& operator=(const ProfilerLock&) = delete;

 private:
  static constexpr const char* kPath = "/tmp/cml-ncu.lock";
  int fd_ = -1;
  bool go_ahead_ = false;
};
}  // namespace

std::optional<std::string> find_ncu() { return tools::find({"ncu"}, tools::search_dirs()); }

Result profile(const std::vector<std::string>& command, const std::string& kernel_regex,
               const std::vector<std::string>& metrics, const std::vector<std::string>& env) {
  Result r;
  const auto ncu = find_ncu();
  if (!ncu) {
    r.error = "ncu (Nsight Compute) is not installed here: the counters cannot be read";
    return r;
  }
  char log_name[] = "/tmp/cml-ncu-XXXXXX";
  const int fd = mkstemp(log_name);
  if (fd < 0) {
    r.error = "cannot create a temporary file for ncu's log";
    return r;
  }
  close(fd);
  std::string metric_list;
  for (const auto& m : metrics) metric_list += (metric_list.empty() ? "" : ",") + m;
  std::string cmd;
  for (const auto& e : env) cmd += e + " ";
  // Base units: bytes as bytes, never rescaled to Kbyte by the value's size.
  cmd += tools::quote(*ncu) + " --clock-control none --print-units base --csv --page raw --metrics " +
         tools::quote(metric_list) + " --kernel-name " + tools::quote("regex:" + kernel_regex) + " --log-file " +
         tools::quote(log_name);
  for (const auto& part : command) cmd += " " + tools::quote(part);
  cmd += " 2>&1";
  // A third of the case's time for the lock, and no new attempt past half of it: the
  // runner's watchdog would otherwise report the kernel as never finished.
  const auto start = std::chrono::steady_clock::now();
  const auto budget = std::chrono::duration<double>(tools::case_timeout_s().value_or(60.0));
  const ProfilerLock lock(std::chrono::duration_cast<std::chrono::seconds>(budget / 3));
  if (!lock.go_ahead()) {
    std::remove(log_name);
    r.error = kBusyReason;  // another test's ncu, still running
    return r;
  }
  std::string all, log_text;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) {
      if (std::chrono::steady_clock::now() - start > budget / 2) break;
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    std::ofstream(log_name, std::ios::trunc).close();  // this attempt's log only
    const std::string console = tools::run(cmd).text;
    std::ifstream f(log_name);
    std::stringstream log;
    log << f.rdbuf();
    log_text = log.str();
    all = log_text + console;
    if (!busy_problem(all)) break;
  }
  std::remove(log_name);
  if (const auto why = permission_problem(all)) {
    r.error = *why;
    return r;
  }
  if (const auto why = busy_problem(all)) {
    r.error = *why;
    return r;
  }
  r.kernels = parse_raw_csv(log_text, metrics);
  r.trouble = trouble_lines(all);
  if (r.kernels.empty()) {
    r.error = "ncu profiled no kernel matching '" + kernel_regex + "': " + all.substr(0, 400);
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace cml::ncu
