! A ring, an allreduce and a nonblocking exchange through the mpi module.
program ring_usempi
  use mpi
  implicit none
  ! (the mpi module)
  integer :: ierr, rank, nprocs, next, prev, round, req(2)
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2)
  double precision :: token(4), total, one
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  next = mod(rank + 1, nprocs)
  prev = mod(rank + nprocs - 1, nprocs)
  token = 1.0d0
  do round = 0, 2
    if (rank == 0) then
      call MPI_Send(token, 4, MPI_DOUBLE_PRECISION, next, round, MPI_COMM_WORLD, ierr)
      call MPI_Recv(token, 4, MPI_DOUBLE_PRECISION, prev, round, MPI_COMM_WORLD, status, ierr)
    else
      call MPI_Recv(token, 4, MPI_DOUBLE_PRECISION, prev, round, MPI_COMM_WORLD, status, ierr)
      call MPI_Send(token, 4, MPI_DOUBLE_PRECISION, next, round, MPI_COMM_WORLD, ierr)
    end if
  end do
  one = 1.0d0
  call MPI_Allreduce(one, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (int(total) /= nprocs) stop 1
  call c_side_allreduce()
  call MPI_Irecv(token, 4, MPI_DOUBLE_PRECISION, prev, 50, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(token, 4, MPI_DOUBLE_PRECISION, next, 50, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, statuses, ierr)
  if (statuses(MPI_SOURCE, 1) /= prev) stop 2
  call MPI_Finalize(ierr)
end program ring_usempi
