#pragma once
// Mixed precision (namespace minidl::amp): one include for autocast and loss scaling.
//   amp::AutocastGuard (core/autocast.h)      ops in the autocast policy cast their inputs
//   amp::AutocastOp, cast_policy (ops/autocast_policy.h)   the policy table
//   amp::GradScaler (optim/grad_scaler.h)      dynamic loss scaling for float16
#include "minidl/core/autocast.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/optim/grad_scaler.h"
