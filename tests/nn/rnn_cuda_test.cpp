// nn::LSTM, nn::GRU, nn::RNN and the cells moved to a GPU give the CPU's outputs, final states
// and gradients (input, initial state, every parameter), in float32, with dropout between layers
// in training (the same seed draws the same masks on both devices) and under bfloat16 autocast.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

// (output, h_n, c_n) of one call, c_n undefined but for LSTM.
using Outputs = std::tuple<Tensor, Tensor, Tensor>;
using Call =
    std::function<Outputs(nn::Module&, const Tensor& x, const Tensor& h0, const Tensor& c0)>;

// Runs `call` on `cpu` and on `gpu` (the same parameters, already on the GPU) and compares the
// outputs and the gradients of a weighted sum of them.
void expect_cpu_parity(nn::Module& cpu, nn::Module& gpu, const Call& call, const Shape& input,
                       const Shape& h_shape, const Shape& c_shape) {
  const Tensor x = wiggly(input, 0.0).requires_grad_();
  const Tensor h0 = wiggly(h_shape, 1.0).mul(0.5).requires_grad_();
  const Tensor c0 = wiggly(c_shape, 2.0).mul(0.5).requires_grad_();
  const Tensor gx = x.detach().cuda().requires_grad_();
  const Tensor gh0 = h0.detach().cuda().requires_grad_();
  const Tensor gc0 = c0.detach().cuda().requires_grad_();
  manual_seed(21);
  auto [out, h_n, c_n] = call(cpu, x, h0, c0);
  manual_seed(21);
  auto [gpu_out, gpu_h_n, gpu_c_n] = call(gpu, gx, gh0, gc0);
  EXPECT_TRUE(all_close(gpu_out.cpu(), out, 1e-5, 1e-4));
  EXPECT_TRUE(all_close(gpu_h_n.cpu(), h_n, 1e-5, 1e-4));
  if (c_n.defined()) EXPECT_TRUE(all_close(gpu_c_n.cpu(), c_n, 1e-5, 1e-4));

  auto loss = [](const Tensor& o, const Tensor& h, const Tensor& c) {
    const Tensor up = wiggly(o.sizes(), 3.0).to(o.device());
    Tensor total = sum(o * up) + sum(h * wiggly(h.sizes(), 4.0).to(h.device()));
    if (c.defined()) total = total + sum(c * wiggly(c.sizes(), 5.0).to(c.device()));
    return total;
  };
  loss(out, h_n, c_n).backward();
  loss(gpu_out, gpu_h_n, gpu_c_n).backward();
  EXPECT_TRUE(all_close(gx.grad().cpu(), x.grad(), 1e-4, 1e-3));
  EXPECT_TRUE(all_close(gh0.grad().cpu(), h0.grad(), 1e-4, 1e-3));
  if (c_n.defined()) EXPECT_TRUE(all_close(gc0.grad().cpu(), c0.grad(), 1e-4, 1e-3));
  const std::vector<Tensor> cpu_parameters = cpu.parameters(), gpu_parameters = gpu.parameters();
  ASSERT_EQ(cpu_parameters.size(), gpu_parameters.size());
  for (size_t i = 0; i < cpu_parameters.size(); ++i) {
    EXPECT_TRUE(gpu_parameters[i].is_cuda());
    EXPECT_TRUE(all_close(gpu_parameters[i].grad().cpu(), cpu_parameters[i].grad(), 1e-4, 1e-3))
        << "parameter " << i;
  }
}

Outputs call_lstm(nn::Module& module, const Tensor& x, const Tensor& h0, const Tensor& c0) {
  auto [out, state] = dynamic_cast<nn::LSTMImpl&>(module).forward(x, std::make_tuple(h0, c0));
  return {out, std::get<0>(state), std::get<1>(state)};
}

Outputs call_gru(nn::Module& module, const Tensor& x, const Tensor& h0, const Tensor&) {
  auto [out, h_n] = dynamic_cast<nn::GRUImpl&>(module).forward(x, h0);
  return {out, h_n, Tensor()};
}

Outputs call_rnn(nn::Module& module, const Tensor& x, const Tensor& h0, const Tensor&) {
  auto [out, h_n] = dynamic_cast<nn::RNNImpl&>(module).forward(x, h0);
  return {out, h_n, Tensor()};
}

// Two modules with the same parameters, the second on the GPU.
template <class Holder, class Options>
std::pair<Holder, Holder> cpu_and_gpu(const Options& options) {
  manual_seed(9);
  Holder cpu(options);
  manual_seed(9);
  Holder gpu(options);
  gpu->to(Device(kCUDA));
  return {cpu, gpu};
}

TEST(RecurrentCuda, LstmMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (bool batch_first : {false, true}) {
    auto [cpu, gpu] = cpu_and_gpu<nn::LSTM>(nn::LSTMOptions(5, 8)
                                                .num_layers(2)
                                                .bidirectional(true)
                                                .batch_first(batch_first)
                                                .dropout(0.3));
    const Shape input = batch_first ? Shape{4, 7, 5} : Shape{7, 4, 5};
    expect_cpu_parity(*cpu, *gpu, call_lstm, input, {4, 4, 8}, {4, 4, 8});  // dropout drawn
    cpu->eval();
    gpu->eval();
    cpu->zero_grad();
    gpu->zero_grad();
    expect_cpu_parity(*cpu, *gpu, call_lstm, input, {4, 4, 8}, {4, 4, 8});
  }
  auto [cpu, gpu] = cpu_and_gpu<nn::LSTM>(nn::LSTMOptions(5, 8).num_layers(2).proj_size(3));
  expect_cpu_parity(*cpu, *gpu, call_lstm, {6, 5}, {2, 3}, {2, 8});  // unbatched
}

TEST(RecurrentCuda, GruAndRnnMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  {
    auto [cpu, gpu] =
        cpu_and_gpu<nn::GRU>(nn::GRUOptions(5, 8).num_layers(2).bidirectional(true).dropout(0.3));
    expect_cpu_parity(*cpu, *gpu, call_gru, {7, 4, 5}, {4, 4, 8}, {4, 4, 8});
  }
  {
    auto [cpu, gpu] = cpu_and_gpu<nn::RNN>(
        nn::RNNOptions(5, 8).num_layers(2).nonlinearity(nn::RNNNonlinearity::ReLU).bias(false));
    expect_cpu_parity(*cpu, *gpu, call_rnn, {7, 4, 5}, {2, 4, 8}, {2, 4, 8});
  }
}

TEST(RecurrentCuda, CellsMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  {
    auto [cpu, gpu] = cpu_and_gpu<nn::LSTMCell>(nn::LSTMCellOptions(5, 8));
    expect_cpu_parity(*cpu, *gpu,
                      [](nn::Module& module, const Tensor& x, const Tensor& h0, const Tensor& c0) {
                        auto [h, c] = dynamic_cast<nn::LSTMCellImpl&>(module).forward(
                            x, std::make_tuple(h0, c0));
                        return Outputs{h, h, c};
                      },
                      {4, 5}, {4, 8}, {4, 8});
  }
  {
    auto [cpu, gpu] = cpu_and_gpu<nn::GRUCell>(nn::GRUCellOptions(5, 8));
    expect_cpu_parity(*cpu, *gpu,
                      [](nn::Module& module, const Tensor& x, const Tensor& h0, const Tensor&) {
                        const Tensor h = dynamic_cast<nn::GRUCellImpl&>(module).forward(x, h0);
                        return Outputs{h, h, Tensor()};
                      },
                      {4, 5}, {4, 8}, {4, 8});
  }
  {
    auto [cpu, gpu] = cpu_and_gpu<nn::RNNCell>(nn::RNNCellOptions(5, 8));
    expect_cpu_parity(*cpu, *gpu,
                      [](nn::Module& module, const Tensor& x, const Tensor& h0, const Tensor&) {
                        const Tensor h = dynamic_cast<nn::RNNCellImpl&>(module).forward(x, h0);
                        return Outputs{h, h, Tensor()};
                      },
                      {5}, {8}, {8});  // unbatched
  }
}

TEST(RecurrentCuda, AutocastMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  auto [cpu, gpu] = cpu_and_gpu<nn::LSTM>(nn::LSTMOptions(5, 8).num_layers(2).bidirectional(true));
  const Tensor x = wiggly({7, 4, 5});
  amp::AutocastGuard autocast(kBFloat16);
  auto [cpu_out, cpu_state] = cpu->forward(x);
  auto [gpu_out, gpu_state] = gpu->forward(x.cuda());
  EXPECT_EQ(gpu_out.dtype(), kBFloat16);
  EXPECT_TRUE(all_close(gpu_out.cpu(), cpu_out, 3e-2, 3e-2));
  EXPECT_TRUE(all_close(std::get<1>(gpu_state).cpu(), std::get<1>(cpu_state), 3e-2, 3e-2));
  sum(gpu_out.to(kFloat32)).backward();
  EXPECT_EQ(gpu->all_weights()[0].grad().dtype(), kFloat32);
  EXPECT_TRUE(gpu->all_weights()[0].grad().is_cuda());
}

}  // namespace
}  // namespace minidl
