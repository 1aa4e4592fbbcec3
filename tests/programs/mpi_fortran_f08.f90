! A ring, an allreduce and a nonblocking exchange through mpi_f08.
program ring_f08
  use mpi_f08
  implicit none
  integer :: rank, nprocs, next, prev, round
  type(MPI_Status) :: status, statuses(2)
  type(MPI_Request) :: req(2)
  double precision :: token(4), total, one
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  next = mod(rank + 1, nprocs)
  prev = mod(rank + nprocs - 1, nprocs)
  token = 1.0d0
  do round = 0, 2
    if (rank == 0) then
      call MPI_Send(token, 4, MPI_DOUBLE_PRECISION, next, round, MPI_COMM_WORLD)
      call MPI_Recv(token, 4, MPI_DOUBLE_PRECISION, prev, round, MPI_COMM_WORLD, status)
    else
      call MPI_Recv(token, 4, MPI_DOUBLE_PRECISION, prev, round, MPI_COMM_WORLD, status)
      call MPI_Send(token, 4, MPI_DOUBLE_PRECISION, next, round, MPI_COMM_WORLD)
    end if
  end do
  one = 1.0d0
  call MPI_Allreduce(one, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (int(total) /= nprocs) stop 1
  call c_side_allreduce()
  call MPI_Irecv(token, 4, MPI_DOUBLE_PRECISION, prev, 50, MPI_COMM_WORLD, req(1))
  call MPI_Isend(token, 4, MPI_DOUBLE_PRECISION, next, 50, MPI_COMM_WORLD, req(2))
  call MPI_Waitall(2, req, statuses)
  if (statuses(1)%MPI_SOURCE /= prev) stop 2
  call MPI_Finalize()
end program ring_f08
