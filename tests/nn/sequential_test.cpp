// nn::Sequential: composition, naming, indexing, and type erasure over any Tensor -> Tensor
// module.
#include <string>
#include <vector>

#include "minidl/nn/nn.h"
#include "minidl/ops/random.h"
#include "test_modules.h"
#include "test_util.h"

namespace minidl {
namespace {

TEST(Sequential, ForwardAppliesTheElementsInOrder) {
  nn::Linear first(4, 8), second(8, 3);
  nn::ReLU activation;
  nn::Sequential sequence{first, activation, second};
  Tensor x = randn({5, 4});
  EXPECT_TRUE(testing::all_close(sequence->forward(x), second(activation(first(x))), 0, 0));
  EXPECT_TRUE(testing::all_close(sequence(x), sequence->forward(x), 0, 0));
}

TEST(Sequential, ElementsAreChildrenNamedByPosition) {
  nn::Sequential sequence{nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 3)};
  EXPECT_EQ(sequence->named_children().keys(), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(sequence->named_parameters().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(sequence->size(), 3u);
  EXPECT_FALSE(sequence->is_empty());
}

TEST(Sequential, PushBackAppendsWithPositionalOrGivenNames) {
  nn::Sequential sequence;
  EXPECT_TRUE(sequence->is_empty());
  sequence->push_back(nn::Linear(2, 3));
  sequence->push_back("activation", nn::Tanh());
  sequence->push_back(std::make_shared<nn::LinearImpl>(3, 1));  // a plain shared_ptr works too
  EXPECT_EQ(sequence->named_children().keys(), (std::vector<std::string>{"0", "activation", "2"}));
  EXPECT_EQ(sequence->forward(randn({7, 2})).sizes(), (Shape{7, 1}));
}

TEST(Sequential, IndexingGivesTheModules) {
  nn::Linear first(4, 8);
  nn::Sequential sequence{first, nn::ReLU()};
  EXPECT_EQ(sequence[0].get(), first.get());
  EXPECT_EQ(sequence->ptr(1)->name(), "ReLU");
  EXPECT_EQ(&sequence->at<nn::LinearImpl>(0), first.get());
  EXPECT_ERROR_CONTAINS(sequence->at<nn::LinearImpl>(1), "element 1 is a ReLU");
  EXPECT_ERROR_CONTAINS(sequence->ptr(2), "index 2 is out of range for 2 element(s)");
  int count = 0;
  for (const nn::AnyModule& element : *sequence) count += element.ptr() != nullptr;
  EXPECT_EQ(count, 2);
}

TEST(Sequential, HoldsUserModulesAndNestedSequentials) {
  nn::Sequential sequence{testing::TinyNet(), nn::Sequential{nn::ReLU(), nn::Identity()}};
  EXPECT_EQ(sequence->forward(randn({3, 4})).sizes(), (Shape{3, 2}));
  EXPECT_EQ(sequence->named_parameters().keys()[0], "0.scale");
}

TEST(Sequential, EmptySequentialReturnsItsInput) {
  nn::Sequential sequence;
  Tensor x = randn({2, 2});
  EXPECT_TRUE(sequence->forward(x).is_same(x));
}

TEST(Sequential, RejectsEmptyHolders) {
  nn::Sequential sequence;
  EXPECT_ERROR_CONTAINS(sequence->push_back(nn::Linear(nullptr)), "AnyModule: expected a module");
}

}  // namespace
}  // namespace minidl
