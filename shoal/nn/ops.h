// All differentiable ops of shoal::nn in one include: math and shape ops (ops_math.h),
// activations and NN ops (ops_nn.h), sparse embedding pooling (ops_sparse.h), and the
// broadcasting ops of traced TF graphs (ops_broadcast.h).
#pragma once

#include "shoal/nn/autodiff.h"
#include "shoal/nn/ops_broadcast.h"
#include "shoal/nn/ops_math.h"
#include "shoal/nn/ops_nn.h"
#include "shoal/nn/ops_sparse.h"
