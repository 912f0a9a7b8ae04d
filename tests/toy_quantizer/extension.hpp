// The toy quantizer's registration with lancet (docs/quantizers.md): the program
// defines LANCET_QUANTIZER_EXTENSION as this header, which declares the parameters and
// names them and their traits for quantizer/params.hpp and quantizer/traits.hpp.
#pragma once

#include "toy_quantizer/params.hpp"

#define LANCET_EXTENSION_QUANTIZERS , ::toy_q4::q4_params
#define LANCET_EXTENSION_QUANTIZER_TRAITS "toy_quantizer/traits.hpp"
