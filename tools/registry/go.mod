module github.com/rudder/operator/tools/registry

go 1.26

require github.com/google/go-containerregistry v0.22.1
