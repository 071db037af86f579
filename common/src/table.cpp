// See cml/table.hpp.
#include "cml/table.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cml {

Table::Table(std::string name, std::vector<std::string> columns)
    : name_(std::move(name)), columns_(std::move(columns)) {}

Table& Table::row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw std::logic_error("table " + name_ + ": a row has " + std::to_string(cells.size()) + " cells for " +
                           std::to_string(columns_.size()) + " columns");
  rows_.push_back(std::move(cells));
  return *this;
}

namespace {
std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Columns a cell takes on a terminal: UTF-8 characters, not bytes ("±" is two bytes, one column).
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0u) != 0x80u;  // count every byte but continuation bytes
  return n;
}
}  // namespace

std::string Table::csv_text() const {
  std::ostringstream os;
  for (std::size_t c = 0; c < columns_.size(); ++c) os << (c ? "," : "") << csv_cell(columns_[c]);
  os << "\n";
  for (const auto& r : rows_) {
    for (std::size_t c = 0; c < r.size(); ++c) os << (c ? "," : "") << csv_cell(r[c]);
    os << "\n";
  }
  return os.str();
}

void Table::print(std::FILE* out, bool csv) const {
  if (csv) {
    std::fputs(csv_text().c_str(), out);
    return;
  }
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) width[c] = display_width(columns_[c]);
  for (const auto& r : rows_)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], display_width(r[c]));
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      // The first column reads left to right; numbers line up on the right.
      const std::string pad(width[c] - display_width(cells[c]), ' ');
      s += (c ? "  " : "") + (c == 0 ? cells[c] + pad : pad + cells[c]);
    }
    std::fprintf(out, "%s\n", s.c_str());
  };
  line(columns_);
  for (const auto& r : rows_) line(r);
}

void Table::write_csv(const std::string& dir) const { write_file(dir, name_ + ".csv", csv_text()); }

void write_file(const std::string& dir, const std::string& filename, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir + ": " + ec.message());
  const fs::path final_path = fs::path(dir) / filename;
  const fs::path temp_path = fs::path(dir) / ("." + filename + ".partial");
  {
    std::ofstream f(temp_path);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + temp_path.string());
  }
  fs::rename(temp_path, final_path, ec);
  if (ec) throw std::runtime_error("cannot write " + final_path.string() + ": " + ec.message());
}

void Table::emit(bool csv, const std::string& dir) const {
  print(stdout, csv);
  if (!dir.empty()) write_csv(dir);
}

std::string fixed(double v, int decimals) {
  if (std::isnan(v)) return "-";
  std::ostringstream os;
  os.precision(decimals);
  os << std::fixed << v;
  return os.str();
}

}  // namespace cml
