// Test fixture for plugin_test.cc: a shared library that is not a model plugin (it has no
// shoal_register_models).
extern "C" int shoal_fixture_answer() { return 42; }
