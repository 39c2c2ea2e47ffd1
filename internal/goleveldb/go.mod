module github.com/syndtr/goleveldb

go 1.14

require (
	github.com/fsnotify/fsnotify v1.5.4 // indirect
	github.com/golang/snappy v0.0.4
	github.com/onsi/ginkgo v1.16.5
	github.com/onsi/gomega v1.19.0
	github.com/stretchr/testify v1.7.2
	golang.org/x/net v0.0.0-20220607020251-c690dde0001d // indirect
	golang.org/x/xerrors v0.0.0-20220517211312-f3a8303e98df // indirect
)
