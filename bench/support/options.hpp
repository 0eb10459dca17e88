#pragma once
// Command-line options of the main job: --name=value or --name value, comma lists.

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace dsconv_bench {

class options {
 public:
  options(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0) throw std::runtime_error("unexpected argument: " + a);
      a = a.substr(2);
      const auto eq = a.find('=');
      if (eq != std::string::npos) {
        values_.push_back({a.substr(0, eq), a.substr(eq + 1)});
      } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
        values_.push_back({a, argv[++i]});
      } else {
        values_.push_back({a, "1"});
      }
    }
  }

  // The option's value, else the environment variable's, else the fallback.
  std::string get(const std::string& name, const char* env, const std::string& fallback) const {
    for (const auto& v : values_)
      if (v.first == name) return v.second;
    if (env) {
      if (const char* e = std::getenv(env)) return e;
    }
    return fallback;
  }

  bool has(const std::string& name) const {
    for (const auto& v : values_)
      if (v.first == name) return true;
    return false;
  }

  static std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : list) {
      if (c == ',') {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

}  // namespace dsconv_bench
