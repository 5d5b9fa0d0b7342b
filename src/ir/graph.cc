#include "ir/graph.h"

namespace nxrt::ir {

std::string Node::describe() const {
  std::string out = op_type + " node";
  if (!name.empty()) out += " '" + name + "'";
  else if (!outputs.empty()) out += " producing '" + outputs[0] + "'";
  return out;
}

}  // namespace nxrt::ir
