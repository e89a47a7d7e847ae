#pragma once
// Optimizers, learning-rate schedulers (namespace minidl::optim) and the mixed-precision
// GradScaler (minidl::amp): one include for all.
#include "minidl/optim/adagrad.h"
#include "minidl/optim/adam.h"
#include "minidl/optim/checkpointable_scheduler.h"
#include "minidl/optim/grad_scaler.h"
#include "minidl/optim/lr_scheduler.h"
#include "minidl/optim/multi_tensor_optimizer.h"
#include "minidl/optim/optimizer.h"
#include "minidl/optim/optimizer_state_dict.h"
#include "minidl/optim/reduce_lr_on_plateau.h"
#include "minidl/optim/rmsprop.h"
#include "minidl/optim/scalar_map.h"
#include "minidl/optim/scheduler_composition.h"
#include "minidl/optim/sgd.h"
#include "minidl/optim/warmup_cosine_lr.h"
