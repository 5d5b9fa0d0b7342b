// The C++ layer through an installed nxrt.
#include <cstdio>

#include <nxrt/nxrt.hpp>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  auto env = nxrt::Env::create();
  if (!env) return 1;
  auto session = nxrt::Session::create(*env, argv[1]);
  if (!session) {
    std::fprintf(stderr, "consumer: %s\n", session.status().to_string().c_str());
    return 1;
  }
  std::printf("nxrt %s: %zu outputs\n", nxrt::version().c_str(), session->output_count());
  return 0;
}
