// Golden files: tests/golden/<case>/cmd holds the stepgraph arguments (run inside the case's
// folder); tests/golden/<case>/expected holds stdout, stderr and the exit code. GOLDEN_CASE
// picks one case (CTest runs each separately); UPDATE_GOLDEN=1 rewrites the expected files. A
// case with a file `requires-z3` runs only in builds with Z3 (STEPGRAPH_WITH_Z3).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string run_case(const fs::path& dir) {
  std::string cmd = slurp(dir / "cmd");
  while (!cmd.empty() && (cmd.back() == '\n' || cmd.back() == '\r')) cmd.pop_back();
  fs::path tmp = fs::temp_directory_path() / ("sg_golden_" + dir.filename().string() + "_" + std::to_string(::getpid()));
  std::string full = "cd '" + dir.string() + "' && STEPGRAPH_LIBRARY= '" STEPGRAPH_BIN "' " + cmd + " >'" + tmp.string() + ".out' 2>'" +
                     tmp.string() + ".err'; echo $? >'" + tmp.string() + ".rc'";
  int sys = std::system(full.c_str());
  (void)sys;
  std::string out = slurp(tmp.string() + ".out"), err = slurp(tmp.string() + ".err"), rc = slurp(tmp.string() + ".rc");
  fs::remove(tmp.string() + ".out");
  fs::remove(tmp.string() + ".err");
  fs::remove(tmp.string() + ".rc");
  while (!rc.empty() && rc.back() == '\n') rc.pop_back();
  return "$ stepgraph " + cmd + "\n" + out + "--- stderr ---\n" + err + "--- exit " + rc + " ---\n";
}

}  // namespace

TEST_CASE("golden outputs", "[golden]") {
  fs::path root = fs::path(STEPGRAPH_SOURCE_DIR) / "tests" / "golden";
  const char* only = std::getenv("GOLDEN_CASE");
  bool update = std::getenv("UPDATE_GOLDEN") && std::string(std::getenv("UPDATE_GOLDEN")) == "1";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / "cmd") && (!only || !*only || e.path().filename() == only)) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  REQUIRE(!cases.empty());
  for (const auto& dir : cases) {
#if !STEPGRAPH_HAVE_Z3
    // Outputs that name the Z3 engine's answers exist only in builds with it.
    if (fs::exists(dir / "requires-z3")) continue;
#endif
    std::string actual = run_case(dir);
    fs::path exp = dir / "expected";
    if (update) {
      std::ofstream(exp, std::ios::binary) << actual;
      continue;
    }
    if (!fs::exists(exp)) FAIL("golden case " << dir.filename().string() << " has no expected file (run with UPDATE_GOLDEN=1)");
    INFO("golden case " << dir.filename().string() << " (UPDATE_GOLDEN=1 rewrites it)");
    CHECK(actual == slurp(exp));
  }
}
