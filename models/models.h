#pragma once
// minidl::models: ready-made networks built only from nn.
#include "minidl/models/basic_block.h"
#include "minidl/models/gpt.h"
#include "minidl/models/lenet.h"
#include "minidl/models/resnet.h"
#include "minidl/models/resnet18.h"
#include "minidl/models/resnet20.h"
