#pragma once
// Optimizers, learning-rate schedulers (namespace minidl::optim) and the mixed-precision
// GradScaler (minidl::amp): one include for all.
#include "optim/grad_scaler.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/optimizer_state_dict.h"
#include "optim/scalar_map.h"
#include "optim/sgd.h"
