"""Epoch times and time to a target test accuracy for the PyTorch twins of minidl's trainers
(tools/pytorch/train_*_pytorch.py), counted as minidl's trainers count them: each epoch's seconds include
its evaluation, and the time to the target is the sum of the epochs up to the first one whose test
accuracy reached it.

    clock = TimeToAccuracy(target=0.89, epochs=6)
    for epoch in range(1, 7):
        clock.start_epoch()
        ...train, evaluate...
        clock.end_epoch(test_loss, test_accuracy)   # prints the epoch's line
    print(json.dumps({..., **clock.summary()}))
"""
import time


class TimeToAccuracy:
    def __init__(self, target, epochs):
        self.target = target
        self.epochs = epochs
        self.epoch_seconds = []
        self.seconds_to_target = None
        self.test_accuracy = None
        self._start = None

    def start_epoch(self):
        self._start = time.perf_counter()

    def end_epoch(self, test_loss, test_accuracy):
        seconds = time.perf_counter() - self._start
        self.epoch_seconds.append(seconds)
        self.test_accuracy = test_accuracy
        if self.seconds_to_target is None and test_accuracy >= self.target:
            self.seconds_to_target = sum(self.epoch_seconds)
        print(f"epoch {len(self.epoch_seconds)}/{self.epochs}  test_loss {test_loss:.4f}  "
              f"test_accuracy {test_accuracy:.4f}  {seconds:.1f} s", flush=True)

    def summary(self):
        """The JSON fields: test_accuracy (the last epoch's), epoch_seconds, seconds_to_target
        (None when never reached) and target."""
        return {"test_accuracy": self.test_accuracy, "epoch_seconds": self.epoch_seconds,
                "seconds_to_target": self.seconds_to_target, "target": self.target}
