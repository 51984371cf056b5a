// Everything a hetkern user needs: #include <hetkern/hetkern.hpp>.
#pragma once

#include "hetkern/dtype.hpp"
#include "hetkern/error.hpp"
#include "hetkern/info.hpp"
#include "hetkern/operators.hpp"
#include "hetkern/schedule.hpp"
#include "hetkern/tensor.hpp"
#include "hetkern/tuning.hpp"
#include "hetkern/topology.hpp"
