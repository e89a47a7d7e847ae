// train_cifar10: a CIFAR ResNet (ResNet-20 or ResNet-18) on CIFAR-10 in its binary format, or on
// Fashion-MNIST (--dataset fashion-mnist) where CIFAR-10 is not installed. Random crop and flip
// augment the training images. See docs/guide/training.md for the options and
// docs/benchmarks.md for the accuracies the defaults reach.
#include "minidl/tools/trainers/trainer_program.h"

int main(int argc, char** argv) {
  minidl::tools::TrainerProgram program;
  program.name = "train_cifar10";
  program.description =
      "Trains a CIFAR ResNet on CIFAR-10 (or Fashion-MNIST) with SGD, Adam or AdamW.";
  program.datasets = {"cifar10", "fashion-mnist"};
  program.models = {"resnet20", "resnet18"};
  program.recipe.epochs = 30;
  program.recipe.batch_size = 128;
  program.recipe.lr = 0.1;
  program.recipe.schedule = "onecycle";
  program.recipe.augment = true;
  return minidl::tools::run_trainer_program(program, argc, argv);
}
