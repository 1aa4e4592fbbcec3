! Built with sysmeasure-fortran: planted counts: stencil_mod::smooth 12,
! stencil_mod::norm2 12, external subroutine fill 3.
module stencil_mod
  implicit none
contains
  subroutine smooth(a, n)
    integer, intent(in) :: n
    double precision, intent(inout) :: a(n)
    integer :: i
    do i = 2, n - 1
      a(i) = 0.25d0 * a(i - 1) + 0.5d0 * a(i) + 0.25d0 * a(i + 1)
    end do
  end subroutine smooth

  double precision function norm2(a, n)
    integer, intent(in) :: n
    double precision, intent(in) :: a(n)
    norm2 = sqrt(sum(a * a))
  end function norm2
end module stencil_mod

subroutine fill(a, n, v)
  implicit none
  integer, intent(in) :: n
  double precision, intent(out) :: a(n)
  double precision, intent(in) :: v
  a = v
end subroutine fill

program instr_fortran
  use stencil_mod
  implicit none
  integer, parameter :: n = 1000
  double precision :: a(n), s
  integer :: it, k
  s = 0
  do k = 1, 3
    call fill(a, n, dble(k))
    do it = 1, 4
      call smooth(a, n)
      s = s + norm2(a, n)
    end do
  end do
  print *, s
end program instr_fortran
