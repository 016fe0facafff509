#include "odr_shared.hpp"

void call_from_b() {
  odr_shared_function();
  odr_shared_static();
}
