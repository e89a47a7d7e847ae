#pragma once
// TensorBoard event files, as PyTorch's torch.utils.tensorboard.SummaryWriter writes them:
//
//   train::TensorBoardWriter writer("runs/tb");
//   writer.add_scalar("loss/train", 0.31, /*step=*/100);
//   writer.add_histogram("weights/fc1.weight", model->fc1->weight, /*step=*/100);
//
// then `tensorboard --logdir runs/tb`. Each writer makes a new file in the folder,
// events.out.tfevents.<unix seconds>.<host>.<pid>.<n> (TensorBoard reads every such file there,
// so a resumed run adds one beside the first), and writes Event protocol buffers in TFRecord
// framing (train/tfrecord_writer.h): first the file's version event ("brain.Event:2"), then one
// event per call, each flushed whole, so a killed run leaves a readable file.
//
// The protocol buffers are encoded here by hand rather than with libprotobuf: TensorBoard needs
// three messages (Event, Summary and HistogramProto) and a dozen fields, which the wire format's
// varints, fixed-width numbers and length prefixes cover in a few lines, without a generated
// source, protoc at build time, or a libprotobuf that the installed package would make its
// users link too. The field numbers are those of TensorFlow's event.proto, summary.proto and
// histogram.proto.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "minidl/core/tensor.h"

namespace minidl::train {

class TfRecordWriter;

class TensorBoardWriter {
 public:
  // Creates `log_dir` (and its parents) when it is not there, and a new event file in it.
  // Throws minidl::Error naming the folder or file when either cannot be made.
  explicit TensorBoardWriter(const std::filesystem::path& log_dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // A scalar, stored as float32 (TensorBoard's simple_value), at `step`.
  void add_scalar(const std::string& tag, double value, int64_t step);
  // A histogram of the finite elements of `values` (any device and floating dtype; copied to
  // the host, so it waits for the device): min, max, count, sum, sum of squares, and the counts
  // of `buckets` equal-width buckets between min and max (one bucket when they are equal; none
  // when no element is finite).
  void add_histogram(const std::string& tag, const Tensor& values, int64_t step,
                     int64_t buckets = 30);

  const std::filesystem::path& file() const;

 private:
  void write_event(int64_t step, const std::string& summary);
  std::unique_ptr<TfRecordWriter> records_;
};

}  // namespace minidl::train
