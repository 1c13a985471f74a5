// swift-http-types is the library's HTTP vocabulary (HTTPFields, statuses,
// methods): re-exported, so that an app that imports OAuth2 names them
// without importing HTTPTypes itself, and an app that imports both sees one
// set of types, not two that merely look alike.
//
// In a file of its own, so that it is found, and in Support, the leaf: an
// exported import is visible to every file of the module, so every folder
// may rely on it, as every folder may rely on Support.
@_exported public import HTTPTypes
