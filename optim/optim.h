#pragma once
// Optimizers and learning-rate schedulers (namespace minidl::optim): one include for all.
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/optimizer_state_dict.h"
#include "optim/scalar_map.h"
#include "optim/sgd.h"
