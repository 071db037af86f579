// A result table: printed aligned for people, or as CSV (--csv), and written as
// DIR/<name>.csv (--out=DIR) for ./lab bench to plot. Files are written to a temporary name
// and renamed, so an interrupted run never leaves half a CSV behind.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace cml {

class Table {
 public:
  Table(std::string name, std::vector<std::string> columns);

  // One row; it must have one cell per column (std::logic_error otherwise).
  Table& row(std::vector<std::string> cells);

  const std::string& name() const { return name_; }
  std::size_t rows() const { return rows_.size(); }

  // Aligned text (csv == false) or CSV.
  void print(std::FILE* out, bool csv) const;
  std::string csv_text() const;
  // DIR/<name>.csv; creates DIR. Throws std::runtime_error when it cannot write.
  void write_csv(const std::string& dir) const;
  // print() to stdout, and write_csv(dir) when dir is not empty.
  void emit(bool csv, const std::string& dir) const;

 private:
  std::string name_;
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Writes `text` to DIR/filename (creating DIR) through a temporary name and a rename, so a
// reader never sees half a file. Throws std::runtime_error when it cannot.
void write_file(const std::string& dir, const std::string& filename, const std::string& text);

// A number with a fixed count of decimals ("12.35"); "-" for NaN.
std::string fixed(double v, int decimals = 2);

}  // namespace cml
