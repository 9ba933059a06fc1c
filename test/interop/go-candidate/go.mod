module leasehold.local/go-candidate

go 1.26

require (
	k8s.io/apimachinery v0.37.2
	k8s.io/client-go v0.37.2
)
