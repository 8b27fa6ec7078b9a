// Differentiation never changes the user's functions: every function of
// every FileCheck and execution input (and of the examples) that holds no ad
// op prints the same before and after --ad-differentiate, even where the
// copy that gets differentiated is first lifted, generalized or inlined.
// RUN: %python %utils/check_user_functions.py --ad-opt ad-opt %S/*.mlir %S/../Integration/*.mlir %S/../../examples/*.mlir | FileCheck %s
// CHECK: {{[1-9][0-9]*}} user functions unchanged
