#pragma once
// minidl::models: ready-made networks built only from nn.
#include "models/basic_block.h"
#include "models/lenet.h"
#include "models/resnet.h"
#include "models/resnet18.h"
#include "models/resnet20.h"
