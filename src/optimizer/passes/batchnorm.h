// What the BatchNormalization fusions (fuse_conv_batchnorm, fuse_batchnorm_affine) ask of
// a node.
#pragma once

#include "optimizer/graph_view.h"

namespace nxrt::optimizer {

// True when `bn` is a BatchNormalization computing plain inference-mode normalization of
// its input (no training mode, spatial, no running-statistics output read).
bool is_inference_batchnorm(const ir::Node& bn, const GraphView& view);

}  // namespace nxrt::optimizer
