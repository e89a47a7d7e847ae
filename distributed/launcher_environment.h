#pragma once
// What mpirun (or another PMI launcher) tells a process through its environment, as
// distributed::init() reads it, with MPI (mpi_job.cpp) and without (without_mpi.cpp).
namespace minidl::distributed::detail {

// The value of the environment variable `name`, or nullptr when it is unset or empty.
const char* env(const char* name);

// `name` as a non-negative integer, or `fallback` when it is unset; any other value throws,
// naming the variable.
int env_int(const char* name, int fallback);

// mpirun (OpenMPI), or another PMI launcher, started this process.
bool launched_by_mpirun();

}  // namespace minidl::distributed::detail
