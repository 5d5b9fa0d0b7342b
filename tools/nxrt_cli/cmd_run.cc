#include <sys/stat.h>

#include <chrono>
#include <cstdio>

#include "commands.h"
#include "npy.h"

namespace nxrt::cli {
namespace {

// Output names may hold characters a file name cannot.
std::string file_safe(const std::string& name) {
  std::string out;
  for (char c : name)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_') ? c : '_';
  if (out.empty() || out[0] == '.') out = "_" + out;
  return out;
}

void print_tensor_line(const std::string& name, const Tensor& t) {
  std::printf("  %-16s %-8s %-14s %s\n", name.c_str(), std::string(dtype_name(t.dtype())).c_str(),
              dims_text(t.shape()).c_str(), value_summary(t).c_str());
}

}  // namespace

Status run_command(const RunArgs& args) {
  SessionConfig config;
  config.intra_op_num_threads = args.threads;
  config.inter_op_num_threads = 1;
  NXRT_ASSIGN_OR_RETURN(auto session, load_session(args.model, config));
  NXRT_ASSIGN_OR_RETURN(Feeds feeds, make_feeds(*session, args.inputs));
  if (!args.save_dir.empty()) {
    struct stat st {};
    if (::stat(args.save_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return invalid_argument("--save: '", args.save_dir, "' is not a directory");
  }

  std::printf("model: %s\ninputs:\n", args.model.c_str());
  for (size_t i = 0; i < feeds.names.size(); ++i) {
    const Tensor& t = feeds.values[i].tensor;
    std::printf("  %-16s %-8s %-14s %s\n", feeds.names[i].c_str(),
                std::string(dtype_name(t.dtype())).c_str(), dims_text(t.shape()).c_str(),
                feeds.sources[i].c_str());
  }

  std::vector<Value> outputs;
  auto start = std::chrono::steady_clock::now();
  Status status = session->run(feeds.names, feeds.values, {}, outputs);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) return Status(status.code(), "run failed: " + status.message());

  std::printf("outputs (run took %.3f ms):\n", ms);
  const auto& infos = session->outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = infos[i].name;
    const Value& v = outputs[i];
    if (v.is_none()) {
      std::printf("  %-16s (empty optional)\n", name.c_str());
    } else if (v.is_sequence()) {
      std::printf("  %-16s sequence of %zu tensors\n", name.c_str(), v.sequence->size());
      for (size_t k = 0; k < v.sequence->size(); ++k)
        print_tensor_line("  [" + std::to_string(k) + "]", (*v.sequence)[k]);
    } else {
      print_tensor_line(name, v.tensor);
    }
    if (!args.save_dir.empty()) {
      if (!v.is_sequence() && !v.is_none() && !npy_descr(v.tensor.dtype()).empty()) {
        std::string path = args.save_dir + "/" + file_safe(name) + ".npy";
        NXRT_RETURN_IF_ERROR(write_npy(path, v.tensor));
        std::printf("  %-16s -> %s\n", "", path.c_str());
      } else {
        std::printf("  %-16s (not saved: no .npy form)\n", "");
      }
    }
  }
  return Status();
}

}  // namespace nxrt::cli
